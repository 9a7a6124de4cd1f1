//! How a verb ended, as the three outcomes toolgate's exit codes distinguish. Verbs return a
//! [`Status`]; only the binary turns it into a process exit code, so the numbers are defined here
//! once and documented in the user guide (doc/guide/).

/// How a verb ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Status {
    /// Everything passed, or the gate admitted the response. Exit code 0.
    Passed,
    /// A contract said no: a rejection, a failing case or check, a finding nobody accepted, a
    /// `--fail-on` verdict. Exit code 1.
    Failed,
    /// A usage, I/O or configuration error: something to fix before toolgate can decide anything.
    /// Exit code 2.
    Unusable,
}

impl Status {
    /// The process exit code: 0 passed, 1 a contract said no, 2 a usage or configuration error.
    pub const fn code(self) -> u8 {
        match self {
            Status::Passed => 0,
            Status::Failed => 1,
            Status::Unusable => 2,
        }
    }

    /// [`Passed`](Status::Passed) when `passed`, else [`Failed`](Status::Failed).
    pub const fn passed_if(passed: bool) -> Status {
        if passed {
            Status::Passed
        } else {
            Status::Failed
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_codes_are_the_documented_ones_and_the_worst_wins() {
        assert_eq!(
            [Status::Passed, Status::Failed, Status::Unusable].map(Status::code),
            [0, 1, 2]
        );
        assert_eq!(Status::Passed.max(Status::Unusable), Status::Unusable);
        assert_eq!(Status::passed_if(false), Status::Failed);
    }
}
