//! An hwloc topology owned through hwloc's C API (`hwlocality-sys`), for writing hwloc's
//! predefined memory attributes ([`crate::memattrs`] says why hwlocality cannot): every
//! `unsafe` block of the crate's hwloc calls is here, behind safe methods.

use hwlocality_sys as sys;
use std::ffi::{c_char, c_int, CStr, CString};
use std::marker::PhantomData;

/// An hwloc topology imported from XML, owned through the C API.
pub(crate) struct Raw(sys::hwloc_topology_t);

/// A NUMA node object of the [`Raw`] topology it borrows.
#[derive(Clone, Copy)]
pub(crate) struct Node<'a> {
    obj: *mut sys::hwloc_obj,
    /// The topology the object belongs to.
    topology: sys::hwloc_topology_t,
    _raw: PhantomData<&'a Raw>,
}

impl Drop for Raw {
    fn drop(&mut self) {
        // SAFETY: the pointer came from hwloc_topology_init and is destroyed once.
        unsafe { sys::hwloc_topology_destroy(self.0) }
    }
}

impl Raw {
    /// Imports hwloc XML, keeping every object it holds.
    pub(crate) fn from_xml(xml: &str) -> Result<Raw, String> {
        let text = CString::new(xml).map_err(|_| "the XML holds a NUL byte".to_string())?;
        let len = c_int::try_from(text.as_bytes_with_nul().len())
            .map_err(|_| "the XML is larger than 2 GiB".to_string())?;
        let mut ptr: sys::hwloc_topology_t = std::ptr::null_mut();
        // SAFETY: ptr is an out-parameter.
        if unsafe { sys::hwloc_topology_init(&mut ptr) } != 0 || ptr.is_null() {
            return Err("hwloc_topology_init failed".into());
        }
        let raw = Raw(ptr);
        // SAFETY: raw.0 is a valid, not yet loaded topology; `text` outlives the load
        // (hwloc reads the buffer during hwloc_topology_load) and `len` counts its NUL.
        unsafe {
            if sys::hwloc_topology_set_all_types_filter(raw.0, sys::HWLOC_TYPE_FILTER_KEEP_ALL) != 0
            {
                return Err("hwloc_topology_set_all_types_filter failed".into());
            }
            if sys::hwloc_topology_set_xmlbuffer(raw.0, text.as_ptr(), len) != 0 {
                return Err("hwloc_topology_set_xmlbuffer failed".into());
            }
            if sys::hwloc_topology_load(raw.0) != 0 {
                return Err(format!(
                    "hwloc_topology_load failed ({})",
                    std::io::Error::last_os_error()
                ));
            }
        }
        Ok(raw)
    }

    /// The NUMA node with OS index `os`.
    pub(crate) fn node(&self, os: u32) -> Option<Node<'_>> {
        // SAFETY: a loaded topology; objects are valid while it lives.
        let obj = unsafe {
            let n = sys::hwloc_get_nbobjs_by_depth(self.0, sys::HWLOC_TYPE_DEPTH_NUMANODE);
            (0..n)
                .map(|i| sys::hwloc_get_obj_by_depth(self.0, sys::HWLOC_TYPE_DEPTH_NUMANODE, i))
                .find(|o| !o.is_null() && (**o).os_index == os)
        }?;
        Some(Node {
            obj,
            topology: self.0,
            _raw: PhantomData,
        })
    }

    /// The cpuset of `node` as an hwloc initiator location, borrowing the cpuset.
    fn location(&self, node: Node<'_>) -> sys::hwloc_location {
        assert!(
            node.topology == self.0,
            "an hwloc node used with another topology"
        );
        sys::hwloc_location {
            ty: sys::HWLOC_LOCATION_TYPE_CPUSET,
            location: sys::hwloc_location_u {
                // SAFETY: node.obj is a live object of this topology (checked above),
                // which `node` borrows.
                cpuset: unsafe { (*node.obj).cpuset },
            },
        }
    }

    /// The value of attribute `attr` for the cpuset of `initiator` and `target`, if any.
    pub(crate) fn get(
        &self,
        attr: sys::hwloc_memattr_id_t,
        initiator: Node<'_>,
        target: Node<'_>,
    ) -> Option<u64> {
        let loc = self.location(initiator);
        assert!(
            target.topology == self.0,
            "an hwloc node used with another topology"
        );
        let mut value = 0u64;
        // SAFETY: both objects belong to this loaded topology (checked), which outlives
        // the call; loc borrows the initiator's cpuset; value is an out-parameter.
        let rc =
            unsafe { sys::hwloc_memattr_get_value(self.0, attr, target.obj, &loc, 0, &mut value) };
        (rc == 0).then_some(value)
    }

    /// Sets attribute `attr` for the cpuset of `initiator` and `target` to `value`;
    /// hwloc's return value (0 on success). Raw is neither Send nor Sync (it holds a raw
    /// pointer), so no other thread reads the topology meanwhile.
    pub(crate) fn set(
        &self,
        attr: sys::hwloc_memattr_id_t,
        initiator: Node<'_>,
        target: Node<'_>,
        value: u64,
    ) -> c_int {
        let loc = self.location(initiator);
        assert!(
            target.topology == self.0,
            "an hwloc node used with another topology"
        );
        // SAFETY: both objects belong to this loaded topology (checked), which outlives
        // the call; loc borrows the initiator node's cpuset, which hwloc copies.
        unsafe { sys::hwloc_memattr_set_value(self.0, attr, target.obj, &loc, 0, value) }
    }

    /// Exports the topology as hwloc XML (v2 format).
    pub(crate) fn export(&self) -> Result<String, String> {
        let mut buf: *mut c_char = std::ptr::null_mut();
        let mut len: c_int = 0;
        // SAFETY: buf and len are out-parameters; the buffer is freed by
        // hwloc_free_xmlbuffer after it was copied.
        unsafe {
            if sys::hwloc_topology_export_xmlbuffer(self.0, &mut buf, &mut len, 0) != 0
                || buf.is_null()
            {
                return Err(format!(
                    "hwloc_topology_export_xmlbuffer failed ({})",
                    std::io::Error::last_os_error()
                ));
            }
            let text = CStr::from_ptr(buf).to_string_lossy().into_owned();
            sys::hwloc_free_xmlbuffer(self.0, buf);
            Ok(text)
        }
    }
}
