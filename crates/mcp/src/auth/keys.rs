//! The authorization server's signing keys: a JWKS read into the keys and algorithms the
//! listener accepts (symmetric and unsigned algorithms refused).

use super::*;

/// The verification keys of a JWKS document: every signing key jsonwebtoken can use. Keys it
/// cannot (another type, `use: enc`) are skipped; a set with none is an error.
pub(super) fn parse_jwks(bytes: &[u8]) -> Result<Vec<VerifyKey>, String> {
    let document = toolgate_gate::internals::parse_strict_json(bytes, 16)
        .map_err(|why| format!("not a JWKS document: {why}"))?;
    let entries = document
        .get("keys")
        .and_then(Value::as_array)
        .ok_or("not a JWKS document: no `keys` array")?;
    let mut keys = Vec::new();
    for entry in entries {
        if entry.get("use").and_then(Value::as_str) == Some("enc") {
            continue;
        }
        let Ok(jwk) = serde_json::from_value::<Jwk>(entry.clone()) else {
            continue;
        };
        let Ok(key) = DecodingKey::from_jwk(&jwk) else {
            continue;
        };
        if key.family() == AlgorithmFamily::Hmac {
            // A shared secret in a public key set verifies tokens anyone holding it can mint.
            continue;
        }
        let algorithm = jwk
            .common
            .key_algorithm
            .and_then(|algorithm| algorithm.to_string().parse::<Algorithm>().ok());
        keys.push(VerifyKey {
            kid: jwk.common.key_id.clone(),
            algorithm,
            family: key.family(),
            key,
        });
    }
    if keys.is_empty() {
        return Err(
            "it holds no signing key toolgate can verify with (RSA, EC P-256/P-384, Ed25519)"
                .to_owned(),
        );
    }
    Ok(keys)
}

/// An algorithm the operator named: asymmetric ones only.
pub(super) fn parse_algorithm(name: &str) -> Result<Algorithm, String> {
    if name.eq_ignore_ascii_case("none") {
        return Err("algorithms: `none` accepts unsigned tokens; it is never allowed".to_owned());
    }
    let algorithm: Algorithm = name.parse().map_err(|_| {
        format!(
            "algorithms: {name:?} is not a JWS algorithm (RS256, PS256, ES256, ES384, EdDSA, …)"
        )
    })?;
    if algorithm.family() == AlgorithmFamily::Hmac {
        return Err(format!(
            "algorithms: {name} is symmetric: whoever verifies could mint tokens; a resource server verifies with the authorization server's public keys"
        ));
    }
    Ok(algorithm)
}
