//! Socket and channel of a memory device, read from its device locator and bank
//! locator strings (SMBIOS type 17).
//!
//! The specification leaves these strings to the vendor; the forms below are the ones
//! seen in public `dmidecode` outputs and firmware sources:
//!
//! | Locator | Bank locator | Socket | Channel | Seen on |
//! |---|---|---|---|---|
//! | `P1-DIMMA1` | `P0_Node0_Channel0_Dimm0` | P1 | A | Supermicro (Intel, AMD) |
//! | `DIMM_A1` | `NODE 0 CHANNEL 0 DIMM 0` | NODE 0 | A | Intel boards |
//! | `CPU1_DIMM_A1` | `NODE 1` | CPU1 | A | Intel reference (Skylake-SP) |
//! | `CPU0_DIMM_A1` / `CPU0_DIMM_A` | `BANK 0` | CPU0 | A | Intel reference, coreboot |
//! | `DIMM 0` | `P0 CHANNEL A` | P0 | A | AMD (AGESA-based firmware) |
//! | `DIMM_P0_A0` | `BANK 0` | P0 | A | Gigabyte (EPYC) |
//! | `CPU0 CH0/D0`, `CPU0_C0D0` | | CPU0 | 0 | Intel Forest City, Inspur |
//! | `ChannelA-DIMM0`, `Controller0-ChannelA-DIMM0` | `BANK 0` | | A / 0 A | client boards |
//! | `PROC 1 DIMM 3` | `Not Specified` | PROC 1 | - | HPE ProLiant |
//! | `A1` ... `B12` | `Not Specified` | A, B | - | Dell PowerEdge |
//! | `DIMM 1`, `Socket 1 DIMM 1` | `Bank 1` | -, Socket 1 | - | Ampere Altra (Mt. Jade) |
//!
//! A dash: the strings do not say (HPE and Dell number the slots of a socket, and which
//! slots share a channel depends on the board). Socket numbers are returned as written;
//! the caller ranks them (some vendors count from 0, some from 1).

use regex::Regex;
use std::sync::OnceLock;

/// A socket as a locator names it.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SocketLabel {
    /// The word before the number (`CPU`, `P`, `PROC`, `SOCKET`, `NODE`, or `DELL` for
    /// the letter of a Dell locator).
    pub family: String,
    /// The number as written (a Dell letter A is 0).
    pub number: u32,
    /// The text matched (`P1`, `CPU0`, `PROC 1`, `A`).
    pub text: String,
}

/// What the locators say about a device.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Placement {
    /// The socket, if named.
    pub socket: Option<SocketLabel>,
    /// The channel, if named (`A`, `0`, `NODE0 A`: a memory controller prefix kept so
    /// that channels of different controllers stay apart).
    pub channel: Option<String>,
    /// The slot within the channel, if named.
    pub slot: Option<String>,
    /// Which rules matched, for the record.
    pub rule: String,
}

struct Rules {
    socket_word: Regex,
    socket_p: Regex,
    socket_node: Regex,
    channel_word: Regex,
    channel_letter: Regex,
    channel_cpu_letter: Regex,
    channel_cd: Regex,
    slot_digit: Regex,
    dell: Regex,
}

fn rules() -> &'static Rules {
    static R: OnceLock<Rules> = OnceLock::new();
    R.get_or_init(|| {
        let re = |s: &str| Regex::new(s).expect("static regex");
        Rules {
            // CPU0, CPU1_..., PROC 1, PROCESSOR 2, SOCKET 1, SKT0.
            socket_word: re(r"(?:^|[^A-Z])(CPU|PROCESSOR|PROC|SOCKET|SKT)[\s_-]*(\d+)"),
            // P0 CHANNEL A, P1-DIMMA1, DIMM_P0_A0, P0_NODE0_CHANNEL0_DIMM0.
            socket_p: re(r"(?:^|[^A-Z0-9])P(\d+)(?:$|[\s_-])"),
            // Bank locator NODE 1 / NODE 0 CHANNEL 0 DIMM 0 (Intel boards).
            socket_node: re(r"^NODE\s+(\d+)(?:$|\s)"),
            // CHANNEL A, CHANNEL0, CHANNELA-DIMM0, CH0/D0, with an optional controller
            // before it (NODE0_, CONTROLLER0-, MC1_, IMC0 ).
            channel_word: re(
                r"(?:^|[^A-Z])(?:(NODE|CONTROLLER|IMC|MC)[\s_-]*(\d+)[\s_-]*)?(?:CHANNEL|CH)[\s_-]*([A-Z]|\d+)(?:$|[^A-Z0-9]|DIMM|D\d)",
            ),
            // DIMM_A1, DIMMA1, P1-DIMMA1, CPU0_DIMM_A1, CPU0_DIMM_A, DIMM_P0_A0,
            // CPU0_MC0_DIMM_A1: the letter is the channel, the digits the slot.
            channel_letter: re(
                r"(?:^|[^A-Z])(?:(IMC|MC)[\s_]*(\d+)[\s_-]*)?DIMM[\s_-]*(?:P\d+[\s_-]+)?([A-Z])(\d*)$",
            ),
            // CPU0_A1 (Inspur).
            channel_cpu_letter: re(r"CPU\d+[\s_]+([A-Z])(\d+)$"),
            // CPU0_C0D0 (Inspur).
            channel_cd: re(r"[\s_]C(\d+)D(\d+)$"),
            // DIMM 0, DIMM0, SODIMM1, DIMM_1: a slot number only.
            slot_digit: re(r"DIMM[\s_-]*(\d+)"),
            // Dell: A1 ... B12 (socket letter, slot number).
            dell: re(r"^([A-H])(\d{1,2})$"),
        }
    })
}

fn normalize(s: &str) -> String {
    let u = s.trim().to_ascii_uppercase();
    match u.as_str() {
        "NOT SPECIFIED" | "NOT PROVIDED" | "UNKNOWN" | "NONE" | "N/A" => String::new(),
        _ => u,
    }
}

fn socket_in(s: &str, bank: bool) -> Option<SocketLabel> {
    let r = rules();
    if let Some(c) = r.socket_word.captures(s) {
        let (f, n) = (c.get(1)?, c.get(2)?);
        return Some(SocketLabel {
            family: f.as_str().to_string(),
            number: n.as_str().parse().ok()?,
            text: s[f.start()..n.end()].to_string(),
        });
    }
    if let Some(c) = r.socket_p.captures(s) {
        let number: u32 = c[1].parse().ok()?;
        return Some(SocketLabel {
            family: "P".into(),
            number,
            text: format!("P{number}"),
        });
    }
    if bank {
        if let Some(c) = r.socket_node.captures(s) {
            let number: u32 = c[1].parse().ok()?;
            return Some(SocketLabel {
                family: "NODE".into(),
                number,
                text: format!("NODE {number}"),
            });
        }
    }
    None
}

fn channel_word(s: &str) -> Option<(String, Option<String>)> {
    let c = rules().channel_word.captures(s)?;
    let ch = c[3].to_string();
    let label = match (c.get(1), c.get(2)) {
        (Some(w), Some(n)) => format!("{}{} {ch}", w.as_str(), n.as_str()),
        _ => ch,
    };
    Some((label, None))
}

fn channel_letter(s: &str) -> Option<(String, Option<String>)> {
    let r = rules();
    if let Some(c) = r.channel_letter.captures(s) {
        let letter = c[3].to_string();
        let label = match (c.get(1), c.get(2)) {
            (Some(w), Some(n)) => format!("{}{} {letter}", w.as_str(), n.as_str()),
            _ => letter,
        };
        let slot = c
            .get(4)
            .map(|m| m.as_str().to_string())
            .filter(|x| !x.is_empty());
        return Some((label, slot));
    }
    if let Some(c) = r.channel_cpu_letter.captures(s) {
        return Some((c[1].to_string(), Some(c[2].to_string())));
    }
    if let Some(c) = r.channel_cd.captures(s) {
        return Some((c[1].to_string(), Some(c[2].to_string())));
    }
    None
}

/// Reads socket, channel and slot from one device's locator and bank locator.
pub fn parse(locator: &str, bank_locator: &str) -> Placement {
    let loc = normalize(locator);
    let bank = normalize(bank_locator);
    let mut p = Placement::default();
    let mut rules_used: Vec<String> = Vec::new();

    if let Some(s) = socket_in(&loc, false) {
        rules_used.push(format!("socket {} from the locator", s.text));
        p.socket = Some(s);
    } else if let Some(s) = socket_in(&bank, true) {
        rules_used.push(format!("socket {} from the bank locator", s.text));
        p.socket = Some(s);
    }

    // The locator's own channel forms first (on some Supermicro boards the bank
    // locator repeats one value), then the bank locator's CHANNEL form.
    let from_loc = channel_word(&loc).or_else(|| channel_letter(&loc));
    let found = match from_loc {
        Some(x) => Some((x, "locator")),
        None => channel_word(&bank).map(|x| (x, "bank locator")),
    };
    if let Some(((ch, slot), whence)) = found {
        rules_used.push(format!("channel {ch} from the {whence}"));
        p.channel = Some(ch);
        p.slot = slot;
    }
    if p.slot.is_none() {
        if let Some(c) = rules().slot_digit.captures(&loc) {
            p.slot = Some(c[1].to_string());
        }
    }
    p.rule = if rules_used.is_empty() {
        "no socket or channel in the locators".into()
    } else {
        rules_used.join(", ")
    };
    p
}

/// Whether every locator has the Dell form (`A1` ... `B12`: socket letter, slot
/// number), which only makes sense checked over the whole board.
pub fn is_dell_board<'a>(locators: impl IntoIterator<Item = &'a str>) -> bool {
    let mut any = false;
    for l in locators {
        any = true;
        if !rules().dell.is_match(&normalize(l)) {
            return false;
        }
    }
    any
}

/// The socket of a Dell locator (`B7` is the second socket), when
/// [`is_dell_board`] holds.
pub fn dell_socket(locator: &str) -> Option<SocketLabel> {
    let norm = normalize(locator);
    let c = rules().dell.captures(&norm)?;
    let letter = c[1].chars().next()?;
    Some(SocketLabel {
        family: "DELL".into(),
        number: u32::from(letter) - u32::from('A'),
        text: letter.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sc(l: &str, b: &str) -> (Option<String>, Option<String>) {
        let p = parse(l, b);
        (p.socket.map(|s| s.text), p.channel)
    }

    fn s(x: &str) -> Option<String> {
        Some(x.to_string())
    }

    #[test]
    fn vendor_forms() {
        assert_eq!(
            sc("P1-DIMMA1", "P0_Node0_Channel0_Dimm0"),
            (s("P1"), s("A"))
        );
        assert_eq!(
            sc("P2-DIMMF2", "P1_Node1_Channel2_Dimm1"),
            (s("P2"), s("F"))
        );
        assert_eq!(
            sc("DIMM_A1", "NODE 0 CHANNEL 0 DIMM 0"),
            (s("NODE 0"), s("A"))
        );
        assert_eq!(sc("CPU1_DIMM_A2", "NODE 1"), (s("CPU1"), s("A")));
        assert_eq!(sc("CPU0_DIMM_B1", "BANK 2"), (s("CPU0"), s("B")));
        assert_eq!(sc("CPU0_DIMM_L", "BANK 11"), (s("CPU0"), s("L")));
        assert_eq!(sc("DIMM 0", "P0 CHANNEL A"), (s("P0"), s("A")));
        assert_eq!(sc("DIMM 1", "P1 CHANNEL L"), (s("P1"), s("L")));
        assert_eq!(sc("DIMM_P0_A0", "BANK 0"), (s("P0"), s("A")));
        assert_eq!(sc("DIMM_P1_I1", "BANK 1"), (s("P1"), s("I")));
        assert_eq!(sc("CPU1_DIMM_Q1", "P1 CHANNEL Q"), (s("CPU1"), s("Q")));
        assert_eq!(sc("CPU0 CH3/D1", "BANK 3"), (s("CPU0"), s("3")));
        assert_eq!(sc("CPU1_C2D0", ""), (s("CPU1"), s("2")));
        assert_eq!(sc("CPU0_A1", ""), (s("CPU0"), s("A")));
        assert_eq!(sc("ChannelA-DIMM0", "BANK 0"), (None, s("A")));
        assert_eq!(
            sc("Controller1-ChannelA-DIMM0", "BANK 0"),
            (None, s("CONTROLLER1 A"))
        );
        assert_eq!(sc("SODIMM0", "CHANNEL B DIMM0"), (None, s("B")));
        assert_eq!(sc("CPU0 Channel1 DIMM0", "NODE 0"), (s("CPU0"), s("1")));
        assert_eq!(
            sc("DIMM 2B", "P0_Node0_Channel3_Dimm1"),
            (s("P0"), s("NODE0 3"))
        );
        assert_eq!(sc("PROC 1 DIMM 3", "Not Specified"), (s("PROC 1"), None));
        assert_eq!(sc("Socket 1 DIMM 7", "Bank 7"), (s("SOCKET 1"), None));
        assert_eq!(sc("DIMM 3", "Bank 3"), (None, None));
        assert_eq!(sc("DIMM 0", ""), (None, None));
        assert_eq!(sc("A1", "Not Specified"), (None, None));
    }

    #[test]
    fn slots() {
        assert_eq!(parse("P1-DIMMA2", "").slot.as_deref(), Some("2"));
        assert_eq!(parse("DIMM 1", "P0 CHANNEL A").slot.as_deref(), Some("1"));
    }

    #[test]
    fn dell() {
        assert!(is_dell_board(["A1", "A12", "B3"]));
        assert!(!is_dell_board(["A1", "DIMM_A1"]));
        assert!(!is_dell_board(std::iter::empty()));
        assert_eq!(dell_socket("B7").map(|s| s.number), Some(1));
    }

    #[test]
    fn hostile_strings_do_not_panic() {
        for l in [
            "",
            "\u{0}",
            "CPU99999999999999999999_DIMM_A1",
            "P-",
            "CHANNEL",
            "ü€ DIMM_ü",
        ] {
            let _ = parse(l, l);
        }
    }
}
