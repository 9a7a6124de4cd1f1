//! A call's trace, where the front is built with OTLP (`otlp`); without it (the Python wheel),
//! types of the same names that hold nothing, so the decision's steps read the same either way.

#[cfg(feature = "otlp")]
pub use toolgate_telemetry::{CallSpan, Tracing, TracingConfig};

#[cfg(not(feature = "otlp"))]
pub use untraced::{CallSpan, Tracing};

#[cfg(not(feature = "otlp"))]
mod untraced {
    use std::time::SystemTime;

    use toolgate_gate::{Contract, Decision};

    /// No trace: a build without OTLP never has one.
    #[derive(Debug)]
    pub enum CallSpan {}

    impl CallSpan {
        /// Never called: there is no span.
        pub fn ids(&self) -> Option<(String, String)> {
            match *self {}
        }

        /// Never called: there is no span.
        pub fn upstream_ended(&self, _failure: Option<&'static str>, _at: SystemTime) {
            match *self {}
        }

        /// Never called: there is no span.
        pub fn decided(&self, _contract: &Contract, _decision: &Decision, _started: SystemTime) {
            match *self {}
        }
    }

    /// No exporter: a build without OTLP never has one.
    #[derive(Debug)]
    pub enum Tracing {}

    impl Tracing {
        /// Never called: there is no exporter.
        pub fn audit(&self, _decision: &Decision, _call: Option<&CallSpan>) {
            match *self {}
        }

        /// Never called: there is no exporter.
        pub fn call(&self, _call: &toolgate_telemetry::CallAttributes<'_>) -> CallSpan {
            match *self {}
        }
    }
}
