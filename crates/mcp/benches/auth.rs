//! What the listener's resource server (`--auth`) adds to a call: a bearer token verified and
//! its tool's scopes checked, for an agent's repeated token (the cache of verified tokens) and
//! for a token's first call (its signature verified), with each algorithm an authorization
//! server commonly signs with. `cargo bench -p toolgate-mcp --features _internals --bench auth`;
//! BENCHMARKS.md, "Authorization", reports it.
//!
//! The keys in benches/keys/ were made for this benchmark (`openssl genpkey`) and sign nothing
//! else.

use std::hint::black_box;
use std::path::Path;

use criterion::Criterion;
use jsonwebtoken::jwk::Jwk;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde_json::json;
use toolgate_mcp::internals::BearerCheck;

const RESOURCE: &str = "https://toolgate.bench/mcp";
const ISSUER: &str = "https://auth.bench";

fn key(algorithm: Algorithm) -> EncodingKey {
    let keys = Path::new(env!("CARGO_MANIFEST_DIR")).join("benches/keys");
    let pem = |name: &str| std::fs::read(keys.join(name)).expect("the benchmark's key");
    match algorithm {
        Algorithm::RS256 => EncodingKey::from_rsa_pem(&pem("rs256.pem")),
        Algorithm::ES256 => EncodingKey::from_ec_pem(&pem("es256.pem")),
        _ => EncodingKey::from_ed_pem(&pem("eddsa.pem")),
    }
    .expect("a PEM key")
}

fn bench_bearer(criterion: &mut Criterion) {
    let algorithms = [Algorithm::RS256, Algorithm::ES256, Algorithm::EdDSA];
    let dir = tempfile::tempdir().unwrap();
    let keys: Vec<serde_json::Value> = algorithms
        .iter()
        .map(|algorithm| {
            let mut jwk =
                serde_json::to_value(Jwk::from_encoding_key(&key(*algorithm), *algorithm).unwrap())
                    .unwrap();
            jwk["kid"] = json!(format!("{algorithm:?}"));
            jwk
        })
        .collect();
    std::fs::write(
        dir.path().join("jwks.json"),
        json!({"keys": keys}).to_string(),
    )
    .unwrap();
    let auth = dir.path().join("auth.yaml");
    std::fs::write(
        &auth,
        format!("resource: {RESOURCE}\nauthorization_servers: [{ISSUER}]\njwks: jwks.json\nscopes: [mcp]\ntools:\n  weather:\n    scopes: [weather:read]\n"),
    )
    .unwrap();
    let check = BearerCheck::load(&auth, &["weather"]).unwrap();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let claims = json!({"iss": ISSUER, "aud": RESOURCE, "sub": "agent-1", "scope": "mcp weather:read", "iat": now, "exp": now + 3600});
    let mut group = criterion.benchmark_group("bearer");
    for algorithm in algorithms {
        let mut header = Header::new(algorithm);
        header.kid = Some(format!("{algorithm:?}"));
        let token = jsonwebtoken::encode(&header, &claims, &key(algorithm)).unwrap();
        assert!(
            check.admits_uncached(&token, "weather"),
            "{algorithm:?} verifies"
        );
        group.bench_function(format!("{algorithm:?}/first_call"), |bench| {
            bench.iter(|| black_box(check.admits_uncached(black_box(&token), "weather")))
        });
        group.bench_function(format!("{algorithm:?}/cached"), |bench| {
            bench.iter(|| black_box(check.admits(black_box(&token), "weather")))
        });
    }
    group.finish();
}

/// One decision's audit line: the gate's plain line, the chained one, the chained and signed
/// one (`--audit-key`), each to a writer that discards it.
fn bench_audit_line(criterion: &mut Criterion) {
    use toolgate_gate::{AuditSink, JsonLinesSink, Request};
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/mcp");
    let repository = toolgate_repo::Repository::open(&root).unwrap();
    let contract = repository
        .compile("weather", &repository.version("weather", None).unwrap())
        .unwrap();
    let raw = br#"{"city":"Oslo","temperature_c":3.5,"conditions":"snow"}"#;
    let request = Request::new("7").with_context("city", "Oslo");
    let decision = contract.admit(raw, &request, std::time::SystemTime::now());
    assert!(decision.is_admitted());
    let dir = tempfile::tempdir().unwrap();
    let key = dir.path().join("audit.pem");
    let (private, _) = toolgate_front::generate_key_pair().unwrap();
    std::fs::write(&key, private).unwrap();
    let plain = JsonLinesSink::new(std::io::sink());
    let chained = toolgate_front::chained_audit_stream(Box::new(std::io::sink()), None).unwrap();
    let signed =
        toolgate_front::chained_audit_stream(Box::new(std::io::sink()), Some(&key)).unwrap();
    let mut group = criterion.benchmark_group("audit_line");
    group.bench_function("plain", |bench| {
        bench.iter(|| plain.record_decision(black_box(&decision)))
    });
    group.bench_function("chained", |bench| {
        bench.iter(|| chained.record_decision(black_box(&decision)))
    });
    group.bench_function("chained_signed", |bench| {
        bench.iter(|| signed.record_decision(black_box(&decision)))
    });
    group.finish();
}

fn main() {
    let mut criterion = Criterion::default().configure_from_args();
    bench_bearer(&mut criterion);
    bench_audit_line(&mut criterion);
    criterion.final_summary();
}
