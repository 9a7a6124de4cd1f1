//! A bearer token checked: its signature against the authorization server's keys, its claims
//! (issuer, audience, expiry, scopes), and the verdict cached for the token's life.

use super::*;

impl Authorizer {
    /// The answer the cache holds for `token` (a verified token not expired, or one expired
    /// since), without a signature checked; `None` when `token` must be verified.
    pub(crate) fn cached(&self, token: &str) -> Option<Result<Arc<Caller>, Denied>> {
        let digest: [u8; 32] = Sha256::digest(token.as_bytes()).into();
        let now = jsonwebtoken::get_current_timestamp();
        let leeway = self.leeway.as_secs();
        let cache = lock(&self.cache);
        let cached = cache.get(&digest)?;
        if now > cached.expires.saturating_add(leeway) {
            return Some(Err(Denied::Invalid("the token has expired".to_owned())));
        }
        cached
            .not_before
            .is_none_or(|not_before| now.saturating_add(leeway) >= not_before)
            .then(|| Ok(Arc::clone(&cached.caller)))
    }

    /// Verifies `token`: from the cache, or by its signature and claims.
    pub(crate) async fn verify(&self, token: &str) -> Result<Arc<Caller>, Denied> {
        if let Some(answer) = self.cached(token) {
            return answer;
        }
        let digest: [u8; 32] = Sha256::digest(token.as_bytes()).into();
        let now = jsonwebtoken::get_current_timestamp();
        let leeway = self.leeway.as_secs();
        let header = jsonwebtoken::decode_header(token).map_err(|error| {
            Denied::Invalid(match error.kind() {
                ErrorKind::InvalidAlgorithmName => {
                    "the token's alg is not one this proxy accepts (never `none`)".to_owned()
                }
                _ => "not a JWT (header.payload.signature, base64url)".to_owned(),
            })
        })?;
        if !self.algorithms.contains(&header.alg) {
            return Err(Denied::Invalid(format!(
                "the token is signed with {:?}, which this proxy does not accept",
                header.alg
            )));
        }
        let key = match self.key_for(&header) {
            Some(key) => key,
            None => {
                // Perhaps the keys rotated: fetched again (at most every 30 s), then looked up
                // once more.
                self.refetch_for_unknown_key().await;
                self.key_for(&header).ok_or_else(|| {
                    Denied::Invalid(
                        "the token is signed by a key the authorization server's JWKS does not hold"
                            .to_owned(),
                    )
                })?
            }
        };
        let mut validation = Validation::new(header.alg);
        validation.algorithms = vec![header.alg];
        validation.set_audience(&[&self.resource]);
        validation.set_issuer(&[&self.issuer]);
        validation.leeway = leeway;
        validation.validate_nbf = true;
        validation.set_required_spec_claims(&["exp", "iss", "aud"]);
        let data = jsonwebtoken::decode::<Map<String, Value>>(token, &key, &validation)
            .map_err(|error| Denied::Invalid(describe(error.kind())))?;
        let claims = data.claims;
        let subject = claims
            .get(&self.identity_claim)
            .and_then(Value::as_str)
            .filter(|subject| !subject.is_empty())
            .ok_or_else(|| {
                Denied::Invalid(format!(
                    "the token has no `{}` claim naming its caller",
                    self.identity_claim
                ))
            })?;
        let caller = Arc::new(Caller {
            subject: Arc::from(subject),
            scopes: scopes_of(&claims),
            claims: claims.clone(),
        });
        // NumericDate may be fractional (RFC 7519 §2): read as the second it falls in, as
        // jsonwebtoken reads it to validate.
        let expires = claims.get("exp").and_then(numeric_date).unwrap_or(0);
        let not_before = claims.get("nbf").and_then(numeric_date);
        let mut cache = lock(&self.cache);
        if cache.len() >= CACHED_TOKENS {
            cache.retain(|_, cached| now <= cached.expires.saturating_add(leeway));
            if cache.len() >= CACHED_TOKENS {
                cache.clear();
            }
        }
        cache.insert(
            digest,
            Cached {
                caller: Arc::clone(&caller),
                expires,
                not_before,
            },
        );
        Ok(caller)
    }

    /// Forgets every verified token (the benchmark's first-call path).
    #[cfg(feature = "_internals")]
    pub(crate) fn forget_verified(&self) {
        lock(&self.cache).clear();
    }

    /// The key that verifies a token with `header`: the one its `kid` names, fit for its
    /// algorithm; without a `kid`, the one key of the algorithm's family.
    fn key_for(&self, header: &jsonwebtoken::Header) -> Option<DecodingKey> {
        let keys = Arc::clone(&self.keys.read().unwrap_or_else(|p| p.into_inner()));
        let fits = |key: &&VerifyKey| {
            key.family == header.alg.family()
                && key
                    .algorithm
                    .is_none_or(|algorithm| algorithm == header.alg)
        };
        let mut candidates = keys
            .keys
            .iter()
            .filter(fits)
            .filter(|key| match &header.kid {
                Some(kid) => key.kid.as_deref() == Some(kid.as_str()),
                None => true,
            });
        let found = candidates.next()?;
        // Without a `kid`, two keys of one family are ambiguous: neither is tried.
        if header.kid.is_none() && candidates.next().is_some() {
            return None;
        }
        Some(found.key.clone())
    }
}

/// A JWT NumericDate (seconds since the epoch, possibly fractional), as whole seconds; `None`
/// for anything else (negative, not finite, not a number).
fn numeric_date(value: &Value) -> Option<u64> {
    value.as_u64().or_else(|| {
        value
            .as_f64()
            .filter(|seconds| seconds.is_finite() && *seconds >= 0.0 && *seconds < u64::MAX as f64)
            .map(|seconds| seconds.floor() as u64)
    })
}

/// The scopes a token grants: its `scope` (RFC 9068: space-separated), or `scp` (a string or
/// an array, as some issuers write it).
fn scopes_of(claims: &Map<String, Value>) -> BTreeSet<String> {
    let mut scopes = BTreeSet::new();
    for claim in ["scope", "scp"] {
        match claims.get(claim) {
            Some(Value::String(text)) => {
                scopes.extend(text.split_ascii_whitespace().map(str::to_owned));
            }
            Some(Value::Array(values)) => {
                scopes.extend(values.iter().filter_map(Value::as_str).map(str::to_owned));
            }
            _ => {}
        }
    }
    scopes
}

/// Why jsonwebtoken refused a token, in the caller's terms (no claim values repeated).
fn describe(kind: &ErrorKind) -> String {
    match kind {
        ErrorKind::ExpiredSignature => "the token has expired".to_owned(),
        ErrorKind::ImmatureSignature => "the token is not valid yet (nbf)".to_owned(),
        ErrorKind::InvalidAudience => {
            "the token is for another audience: its aud does not name this resource".to_owned()
        }
        ErrorKind::InvalidIssuer => "the token is from another issuer".to_owned(),
        ErrorKind::InvalidSignature => "the token's signature does not verify".to_owned(),
        ErrorKind::InvalidAlgorithm => "the token's alg does not fit its key".to_owned(),
        ErrorKind::MissingRequiredClaim(claim) => format!("the token has no `{claim}` claim"),
        _ => "the token does not verify".to_owned(),
    }
}
