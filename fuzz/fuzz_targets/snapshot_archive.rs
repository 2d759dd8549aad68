//! Topology inputs numalab reads itself: archives of sysfs snapshots (gzip, bzip2 or
//! plain tar) are unpacked with bounds and searched for their root; hwloc's own
//! parsing of the files is not the target.
#![no_main]
use libfuzzer_sys::fuzz_target;
use std::io::Write;

fuzz_target!(|data: &[u8]| {
    let mut f = tempfile::Builder::new()
        .suffix(".tar.gz")
        .tempfile()
        .unwrap();
    f.write_all(data).unwrap();
    let _ =
        numalab_topo::load::Input::detect(f.path()).map(|i| numalab_topo::load::unpack_only(&i));
});
