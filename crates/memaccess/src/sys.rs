//! The crate's system calls (sysconf(3), move_pages(2) in query mode) behind safe
//! functions: the only module of the crate with `unsafe`.

/// sysconf(_SC_PAGESIZE): the base page size, or -1 where the system will not say.
pub(crate) fn sysconf_page_size() -> libc::c_long {
    // SAFETY: sysconf takes a plain integer and touches no memory of ours.
    unsafe { libc::sysconf(libc::_SC_PAGESIZE) }
}

/// move_pages(2) of process `pid` in query mode: the node of each page at the addresses
/// `pages` (addresses in that process, never dereferenced here) is written into the
/// same index of `status` (a negative errno where the page has none). Returns the
/// syscall's result (negative on failure, with errno set).
///
/// Panics if `pages` and `status` differ in length.
pub(crate) fn move_pages_query(
    pid: u32,
    pages: &[*mut libc::c_void],
    status: &mut [libc::c_int],
) -> libc::c_long {
    assert_eq!(pages.len(), status.len(), "one status per page");
    // SAFETY: the kernel reads pages.len() addresses from `pages` and, nodes being NULL
    // (query only), writes as many ints into `status`, which has that length (checked
    // above); both slices are live for the call. The addresses themselves belong to the
    // other process and are only looked up by the kernel.
    unsafe {
        libc::syscall(
            libc::SYS_move_pages,
            pid as libc::c_long,
            pages.len() as libc::c_ulong,
            pages.as_ptr(),
            std::ptr::null::<libc::c_int>(),
            status.as_mut_ptr(),
            0 as libc::c_int,
        )
    }
}
