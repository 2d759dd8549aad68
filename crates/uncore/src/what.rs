//! What to count: the figures asked for, the devices, extra events and the counter
//! budgets (its own module: the session plans from it and the figures are derived
//! according to it).

use crate::table::{Budgets, Topic};

/// What to count.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct What {
    /// Memory bandwidth per controller and socket.
    pub memory: bool,
    /// LLC/SLC hit ratio.
    pub llc: bool,
    /// Directory and snoop traffic.
    pub directory: bool,
    /// Socket links.
    pub links: bool,
    /// Only these devices (None: every uncore device).
    pub devices: Option<Vec<String>>,
    /// Further events, counted and reported without figures (any PMU, uncore or not).
    pub extra: Vec<Extra>,
    /// Counter budgets.
    pub budgets: Budgets,
}

/// An extra event: a device and a named event or an event string
/// (`event=0x35,umask=0x01`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Extra {
    /// Device name.
    pub device: String,
    /// Named event or terms.
    pub event: String,
}

impl What {
    /// Every figure numalab knows.
    pub fn all() -> Self {
        What {
            memory: true,
            llc: true,
            directory: true,
            links: true,
            devices: None,
            extra: Vec::new(),
            budgets: Budgets::table(),
        }
    }

    /// Memory bandwidth only (the cheapest: one group per controller).
    pub fn memory() -> Self {
        What {
            llc: false,
            directory: false,
            links: false,
            ..What::all()
        }
    }

    /// Nothing but the extra events.
    pub fn only(extra: Vec<Extra>) -> Self {
        What {
            memory: false,
            llc: false,
            directory: false,
            links: false,
            devices: Some(Vec::new()),
            extra,
            budgets: Budgets::table(),
        }
    }

    /// Whether a topic is asked for.
    pub fn wants(&self, t: Topic) -> bool {
        match t {
            Topic::Always => true,
            Topic::Memory => self.memory,
            Topic::Llc => self.llc,
            Topic::Directory => self.directory,
            Topic::Links => self.links,
        }
    }

    pub(crate) fn device_selected(&self, name: &str) -> bool {
        self.devices
            .as_ref()
            .is_none_or(|d| d.iter().any(|x| x == name))
    }
}
