//! `contractgen save INPUT DIR`: the contract and documents a fuzz input (the bytes the
//! `random_contract` target was given) generates, written as a corpus case into DIR.
//! `contractgen seed N DIR`: the same for a seed of the property test.
//! `contractgen pair N DIR`: the pair of versions the differ's soundness test checks for seed N,
//! written as a repository (`DIR/contracts/<tool>/v1`, `v2`, each with the documents drawn from
//! it), so `toolgate diff <tool> --root DIR` shows what the test saw.

use std::path::PathBuf;
use std::process::ExitCode;

use toolgate_contractgen::{Bytes, Seeded, TOOL, generate, pair};

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if let [verb, seed, dir] = args.as_slice()
        && verb == "pair"
    {
        let Ok(seed) = seed.parse() else {
            eprintln!("contractgen: {seed:?} is not a seed (a number)");
            return ExitCode::from(2);
        };
        // As the soundness test draws it: 24 documents of each version.
        let pair = pair(&mut Seeded::new(seed), 24);
        let root = PathBuf::from(dir).join("contracts").join(TOOL);
        for (version, generated) in [("v1", &pair.from), ("v2", &pair.to)] {
            if let Err(error) = generated.write_to(&root.join(version)) {
                eprintln!("contractgen: {}: {error}", root.display());
                return ExitCode::from(2);
            }
        }
        for edit in &pair.edits {
            println!("{edit}");
        }
        return ExitCode::SUCCESS;
    }
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
            eprintln!(
                "usage: contractgen save FUZZ-INPUT DIR | contractgen seed N DIR | contractgen pair N DIR"
            );
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
