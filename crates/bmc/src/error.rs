//! What can go wrong reading the BMC, each with the remedy. No variant ever holds a
//! credential: text that comes from outside (a tool's stderr, an HTTP library's
//! message) is scrubbed before it is stored here.

use std::path::PathBuf;

/// An error reading power from the BMC.
#[derive(Debug, thiserror::Error)]
pub enum BmcError {
    /// The settings are contradictory or incomplete.
    #[error("invalid BMC settings: {0}")]
    Config(String),
    /// The CA certificate file (`--bmc-ca-file`, `ca_file`) cannot be used: not a
    /// regular file, too large, unreadable or without a certificate.
    #[error("--bmc-ca-file {0}")]
    File(numalab_schema::input::InputError),
    /// A credential is missing.
    #[error("missing credential: {0}")]
    MissingCredential(String),
    /// A credential file is unsafe or unreadable.
    #[error("--bmc-password-file {path}: {problem}")]
    CredentialFile {
        /// The file.
        path: PathBuf,
        /// What is wrong with it, and the fix.
        problem: String,
    },
    /// The program (`ipmitool`) is not installed or not on `PATH`.
    #[error("{program} not found: install it (Debian: apt-get install ipmitool) or give its path")]
    ToolMissing {
        /// The program as given.
        program: String,
    },
    /// The program could not be started.
    #[error("cannot start {program}: {problem}")]
    Spawn {
        /// The program as given.
        program: String,
        /// The OS error.
        problem: String,
    },
    /// The program did not finish in time; its process group was killed.
    #[error("{what} did not answer within {timeout_ms} ms (killed); is the BMC reachable?")]
    Timeout {
        /// The command, without credentials.
        what: String,
        /// The time limit.
        timeout_ms: u64,
    },
    /// The program failed.
    #[error("{what} failed ({status}): {stderr}")]
    ToolFailed {
        /// The command, without credentials.
        what: String,
        /// Exit status in words.
        status: String,
        /// Its error output, scrubbed of credentials and shortened.
        stderr: String,
    },
    /// The output could not be understood.
    #[error("cannot parse {what}: {problem}")]
    Parse {
        /// What was parsed.
        what: String,
        /// Why it could not be.
        problem: String,
    },
    /// DCMI says power measurement is not active on this BMC.
    #[error(
        "the BMC's DCMI power reading is deactivated (its figures are not measured); \
         `ipmitool dcmi power activate` may turn it on, or use the sensor records or Redfish"
    )]
    DcmiInactive,
    /// The BMC has no figure for the node's power in this source.
    #[error("no node power figure: {0}")]
    NoPower(String),
    /// The TLS certificate was refused or the TLS handshake failed.
    #[error(
        "TLS with {url} failed: {problem}; give the BMC's CA certificate (ca_file), \
         or set insecure: true to skip verification (recorded as insecure)"
    )]
    Tls {
        /// The URL, without credentials.
        url: String,
        /// The TLS library's reason.
        problem: String,
    },
    /// An HTTP request failed below HTTP (connection, timeout, protocol).
    #[error("GET {url} failed: {problem}")]
    Http {
        /// The URL, without credentials.
        url: String,
        /// The reason, scrubbed.
        problem: String,
    },
    /// The server answered with an error status.
    #[error("GET {url}: HTTP {status}{hint}")]
    HttpStatus {
        /// The URL, without credentials.
        url: String,
        /// The HTTP status code.
        status: u16,
        /// What the status usually means here.
        hint: String,
    },
    /// A response was larger than allowed.
    #[error("GET {url}: response larger than {limit_bytes} bytes, refused")]
    TooLarge {
        /// The URL, without credentials.
        url: String,
        /// The limit.
        limit_bytes: u64,
    },
    /// Discovery or a reading needed more requests than allowed.
    #[error("more than {limit} Redfish requests would be needed; raise max_requests or name the chassis")]
    TooManyRequests {
        /// The limit.
        limit: usize,
    },
    /// Stopped by the sampler.
    #[error("cancelled")]
    Cancelled,
}

/// Bad settings or credentials are the user's to fix (usage, or input for a credential
/// file); a BMC that does not answer or gives no power is what this machine cannot do
/// (unsupported); a cancelled read was interrupted.
impl numalab_schema::Classify for BmcError {
    fn class(&self) -> numalab_schema::ErrorClass {
        use numalab_schema::ErrorClass;
        match self {
            BmcError::Config(_) | BmcError::MissingCredential(_) => ErrorClass::Usage,
            BmcError::CredentialFile { .. } | BmcError::File(_) => ErrorClass::Input,
            BmcError::Cancelled => ErrorClass::Interrupted,
            _ => ErrorClass::Unsupported,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use numalab_schema::{Classify, ErrorClass};

    #[test]
    fn settings_are_the_users_to_fix_and_a_silent_bmc_is_unsupported() {
        assert_eq!(BmcError::Config("x".into()).class(), ErrorClass::Usage);
        assert_eq!(
            BmcError::MissingCredential("x".into()).class(),
            ErrorClass::Usage
        );
        let file = BmcError::CredentialFile {
            path: "p".into(),
            problem: "world-readable".into(),
        };
        assert_eq!(file.class(), ErrorClass::Input);
        assert_eq!(BmcError::Cancelled.class(), ErrorClass::Interrupted);
        assert_eq!(BmcError::DcmiInactive.class(), ErrorClass::Unsupported);
    }
}
