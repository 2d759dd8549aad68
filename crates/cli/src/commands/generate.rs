//! `numalab generate`: the man page and shell completions, from the clap definition.

use crate::{CliError, CliResult};
use clap::Args;
use numalab_schema::ErrorClass;

/// What `numalab generate` writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum GenerateWhat {
    /// The man page (roff), e.g. `numalab generate man > numalab.1`.
    Man,
    /// bash completions.
    Bash,
    /// zsh completions.
    Zsh,
    /// fish completions.
    Fish,
}

/// `numalab generate`.
#[derive(Debug, Args)]
pub struct GenerateArgs {
    /// What to write.
    #[arg(value_enum)]
    pub what: GenerateWhat,
}

/// Runs `numalab generate` on the command line's definition `cmd`.
pub fn run(args: GenerateArgs, mut cmd: clap::Command) -> CliResult {
    let mut out = std::io::stdout();
    let io = |e: std::io::Error| {
        CliError::new(ErrorClass::Runtime, format!("cannot write to stdout: {e}"))
    };
    match args.what {
        GenerateWhat::Man => {
            // The top page, then one section per subcommand.
            clap_mangen::Man::new(cmd.clone())
                .render(&mut out)
                .map_err(io)?;
            for sub in cmd.get_subcommands() {
                if sub.get_name() == "generate" {
                    continue;
                }
                let name = format!("numalab-{}", sub.get_name());
                let sub = sub.clone().name(name);
                clap_mangen::Man::new(sub).render(&mut out).map_err(io)?;
            }
        }
        GenerateWhat::Bash => {
            clap_complete::generate(clap_complete::Shell::Bash, &mut cmd, "numalab", &mut out)
        }
        GenerateWhat::Zsh => {
            clap_complete::generate(clap_complete::Shell::Zsh, &mut cmd, "numalab", &mut out)
        }
        GenerateWhat::Fish => {
            clap_complete::generate(clap_complete::Shell::Fish, &mut cmd, "numalab", &mut out)
        }
    }
    Ok(())
}
