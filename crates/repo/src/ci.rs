//! Whether this process runs in CI, read one way by the harness (snapshots are never written
//! there) and by every production front (observe mode never runs there).

/// Whether this process runs in CI, as insta decides it (`CI` set to anything but `false`, `0` or
/// nothing; without `CI`, Azure Pipelines' `TF_BUILD`): snapshots are then never written, and
/// observe mode never runs.
pub fn running_in_ci() -> bool {
    is_ci(
        std::env::var("CI").ok().as_deref(),
        std::env::var_os("TF_BUILD").is_some(),
    )
}

fn is_ci(ci: Option<&str>, tf_build: bool) -> bool {
    match ci {
        Some("false" | "0" | "") => false,
        Some(_) => true,
        None => tf_build,
    }
}

#[cfg(test)]
mod tests {
    use super::is_ci;

    #[test]
    fn ci_is_what_insta_calls_ci() {
        assert!(is_ci(Some("true"), false) && is_ci(Some("1"), false) && is_ci(None, true));
        assert!(!is_ci(Some("0"), true) && !is_ci(Some("false"), false) && !is_ci(None, false));
    }
}
