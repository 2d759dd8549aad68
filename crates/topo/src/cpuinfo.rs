//! `/proc/cpuinfo` text read one way: its processor blocks and their `name : value`
//! fields (x86 and Arm), for every part of numalab that identifies a CPU from it
//! (topology descriptions, the hypervisor flag, home's machine fingerprint).

/// One processor's block of `/proc/cpuinfo` (the lines up to a blank line).
#[derive(Debug, Clone, Copy)]
pub struct Block<'a>(&'a str);

impl<'a> Block<'a> {
    /// The value of the field `name` (the text after the first `:`, trimmed), if the
    /// block has it. Names are compared trimmed and exactly ("model" is not "model name").
    pub fn field(&self, name: &str) -> Option<&'a str> {
        self.0.lines().find_map(|l| {
            let (k, v) = l.split_once(':')?;
            (k.trim() == name).then(|| v.trim())
        })
    }

    /// The words of the `flags` (x86) or `Features` (Arm) field.
    pub fn flags(&self) -> impl Iterator<Item = &'a str> {
        self.field("flags")
            .or_else(|| self.field("Features"))
            .unwrap_or("")
            .split_whitespace()
    }
}

/// The processor blocks of `/proc/cpuinfo` text, in order. Arm kernels end the text
/// with a block of machine-wide fields (`Hardware`, `Serial`); it is a block too.
pub fn blocks(text: &str) -> impl Iterator<Item = Block<'_>> {
    text.split("\n\n").map(Block)
}

/// The first block (the first processor's fields), empty for empty text.
pub fn first(text: &str) -> Block<'_> {
    Block(text.split("\n\n").next().unwrap_or(""))
}

#[cfg(test)]
mod tests {
    use super::*;

    const X86: &str = "processor\t: 0\nvendor_id\t: GenuineIntel\ncpu family\t: 6\nmodel\t\t: 143\nmodel name\t: Intel(R) Xeon(R) Platinum 8480+\nstepping\t: 8\nflags\t\t: fpu vme hypervisor\n\nprocessor\t: 1\nmodel name\t: Intel(R) Xeon(R) Platinum 8480+\n";
    const N1: &str = "processor\t: 0\nBogoMIPS\t: 50.00\nFeatures\t: fp asimd atomics\nCPU implementer\t: 0x41\nCPU architecture: 8\nCPU variant\t: 0x3\nCPU part\t: 0xd0c\nCPU revision\t: 1\n\n";

    #[test]
    fn fields_are_matched_by_their_whole_name() {
        let b = first(X86);
        assert_eq!(b.field("model"), Some("143"));
        assert_eq!(
            b.field("model name"),
            Some("Intel(R) Xeon(R) Platinum 8480+")
        );
        assert_eq!(b.field("cpu family"), Some("6"));
        assert_eq!(b.field("CPU part"), None);
        assert_eq!(
            blocks(X86)
                .filter(|b| b.field("processor").is_some())
                .count(),
            2
        );
    }

    #[test]
    fn arm_fields_and_flags() {
        let b = first(N1);
        assert_eq!(b.field("CPU implementer"), Some("0x41"));
        assert_eq!(b.field("CPU architecture"), Some("8"));
        assert_eq!(b.flags().collect::<Vec<_>>(), ["fp", "asimd", "atomics"]);
        assert!(first(X86).flags().any(|f| f == "hypervisor"));
        assert_eq!(first("").field("processor"), None);
    }
}
