use std::process::ExitCode;

fn main() -> ExitCode {
    toolgate::cli::main()
}
