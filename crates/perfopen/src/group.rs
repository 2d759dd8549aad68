//! A perf_event group: opened member by member (the first that opens leads, each
//! member's status kept), started and stopped as one, read as one with its enabled and
//! running times.

use crate::attrs::{set_start, Start};
use perf_event::{Builder, Counter, ReadFormat};

/// Why a group could not be read: none of its events opened.
pub const NO_EVENT_OPENED: &str = "no event of the group could be opened";

/// The read format of every group member: one read gives every member's value (with
/// its id) and the group's enabled and running times.
pub const GROUP_READ_FORMAT: ReadFormat = ReadFormat::GROUP
    .union(ReadFormat::ID)
    .union(ReadFormat::TOTAL_TIME_ENABLED)
    .union(ReadFormat::TOTAL_TIME_RUNNING);

/// How one member of a group fared when opened.
#[derive(Debug)]
pub enum MemberStatus {
    /// Opened (as the leader, or in the leader's group).
    Opened,
    /// Not an event the kernel counts (the caller gave no builder): nothing tried.
    NotAnEvent,
    /// perf_event_open refused it.
    Failed(std::io::Error),
}

/// One reading of a group.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupValues {
    /// Time the group was enabled, ns.
    pub time_enabled_ns: u64,
    /// Time it was on counters, ns.
    pub time_running_ns: u64,
    /// Count per member (None where it did not open).
    pub counts: Vec<Option<u64>>,
}

/// Prepares a member's builder for its group: the group read format and when it
/// starts (`leader`: whether it is the one that leads).
pub fn prepare_member(b: &mut Builder<'_>, start: Start, leader: bool) {
    b.read_format(GROUP_READ_FORMAT);
    set_start(b, start, leader);
}

/// An opened group: its counters (None where a member did not open) and which leads.
#[derive(Debug)]
pub struct Group {
    leader: Option<usize>,
    counters: Vec<Option<Counter>>,
}

impl Group {
    /// Opens `members` in order (None: not an event, skipped). The first member that
    /// opens leads; the others are opened in its group. Returns the group and each
    /// member's status; members that fail leave the others open.
    pub fn open<'a>(
        members: impl IntoIterator<Item = Option<Builder<'a>>>,
        start: Start,
    ) -> (Group, Vec<MemberStatus>) {
        let mut g = Group {
            leader: None,
            counters: Vec::new(),
        };
        let mut statuses = Vec::new();
        for member in members {
            let Some(mut b) = member else {
                g.counters.push(None);
                statuses.push(MemberStatus::NotAnEvent);
                continue;
            };
            prepare_member(&mut b, start, g.leader.is_none());
            let result = match g.leader {
                None => b.build(),
                Some(li) => {
                    let leader = g.counters[li].as_mut().expect("leader is open");
                    b.build_with_group(leader)
                }
            };
            match result {
                Ok(c) => {
                    if g.leader.is_none() {
                        g.leader = Some(g.counters.len());
                    }
                    g.counters.push(Some(c));
                    statuses.push(MemberStatus::Opened);
                }
                Err(err) => {
                    g.counters.push(None);
                    statuses.push(MemberStatus::Failed(err));
                }
            }
        }
        (g, statuses)
    }

    /// Whether any member opened (there is a leader).
    pub fn is_open(&self) -> bool {
        self.leader.is_some()
    }

    /// The leader, when one opened.
    fn leader(&mut self) -> Option<&mut Counter> {
        let li = self.leader?;
        Some(self.counters[li].as_mut().expect("leader is open"))
    }

    /// Starts every member at once (nothing to do when none opened).
    pub fn enable(&mut self) -> std::io::Result<()> {
        self.leader().map_or(Ok(()), Counter::enable_group)
    }

    /// Stops every member at once (nothing to do when none opened).
    pub fn disable(&mut self) -> std::io::Result<()> {
        self.leader().map_or(Ok(()), Counter::disable_group)
    }

    /// Reads every member in one read: counts so far (None where a member did not
    /// open) and the group's enabled and running times. Errors: [`NO_EVENT_OPENED`], or
    /// the read's error as text.
    pub fn read(&mut self) -> Result<GroupValues, String> {
        let Some(li) = self.leader else {
            return Err(NO_EVENT_OPENED.to_string());
        };
        let data = self.counters[li]
            .as_mut()
            .expect("leader is open")
            .read_group()
            .map_err(|e| e.to_string())?;
        let counts = self
            .counters
            .iter()
            .map(|c| c.as_ref().and_then(|c| data.get(c)).map(|en| en.value()))
            .collect();
        Ok(GroupValues {
            time_enabled_ns: data.time_enabled().map_or(0, |d| d.as_nanos() as u64),
            time_running_ns: data.time_running().map_or(0, |d| d.as_nanos() as u64),
            counts,
        })
    }
}
