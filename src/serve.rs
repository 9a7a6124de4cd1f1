//! `toolgate serve --stdio`'s command line; the server itself is the front crate's
//! (`toolgate_front::serve`), beside the proxy's front it shares.

use std::io::{BufRead, Write};
use std::path::PathBuf;

use toolgate_front::serve::ServeConfig;
use toolgate_repo::{Status, UsageError};

/// `toolgate serve`'s options.
#[derive(Debug, Clone, clap::Args)]
pub(crate) struct ServeOptions {
    /// Serve over stdin and stdout, one JSON object per line (the only transport so far).
    #[arg(long, required = true)]
    stdio: bool,
    /// The contracts: a repository root holding contracts/, or a bundle `toolgate bundle`
    /// wrote (read whole and checked against its manifest and lock before anything is served).
    #[arg(
        long,
        visible_alias = "contracts",
        value_name = "DIR|BUNDLE",
        default_value = "."
    )]
    root: PathBuf,
    /// The longest request line read (default 16 MiB); a longer one is answered with an error.
    #[arg(long, value_name = "BYTES", default_value_t = 16 << 20)]
    max_line_bytes: usize,
    #[command(flatten)]
    front: crate::args::FrontArgs,
}

/// Serves until the input ends.
pub(crate) fn run(
    options: &ServeOptions,
    input: impl BufRead,
    output: &mut impl Write,
) -> Result<Status, UsageError> {
    let config = ServeConfig {
        root: options.root.clone(),
        max_line_bytes: options.max_line_bytes,
        front: options.front.config("toolgate-serve")?,
    };
    toolgate_front::serve::run(&config, input, output)
}
