//! `contractgen save INPUT DIR`: the contract and documents a fuzz input (the bytes the
//! `random_contract` target was given) generates, written as a corpus case into DIR.
//! `contractgen seed N DIR`: the same for a seed of the property test.

use std::path::PathBuf;
use std::process::ExitCode;

use toolgate_contractgen::{Bytes, Seeded, generate};

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let generated = match args.as_slice() {
        [verb, input, _] if verb == "save" => match std::fs::read(input) {
            Ok(bytes) => generate(&mut Bytes::new(&bytes), 12),
            Err(error) => {
                eprintln!("contractgen: {input}: {error}");
                return ExitCode::from(2);
            }
        },
        [verb, seed, _] if verb == "seed" => match seed.parse() {
            Ok(seed) => generate(&mut Seeded::new(seed), 12),
            Err(_) => {
                eprintln!("contractgen: {seed:?} is not a seed (a number)");
                return ExitCode::from(2);
            }
        },
        _ => {
            eprintln!("usage: contractgen save FUZZ-INPUT DIR | contractgen seed N DIR");
            return ExitCode::from(2);
        }
    };
    let dir = PathBuf::from(&args[2]);
    match generated.write_to(&dir) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("contractgen: {}: {error}", dir.display());
            ExitCode::from(2)
        }
    }
}
