//! The pinned surface through a door: which pinned tools the listings this door saw held, and
//! the tools a `tools/list` answer offers the host.

use serde_json::{Value, json};

use super::Door;
use crate::era;
use crate::lock;
use crate::pins;

impl Door {
    /// Why a pinned tool is withheld now, if it is (a tool without a pin never is).
    pub(super) fn surface_refusal(&self, name: &str) -> Option<&'static str> {
        let pin = self.loaded.pins.get(name)?;
        pins::standing(pin, lock(&self.surface).get(name))
    }

    /// Holds what a listing (`complete`: every page) says of the pinned tools.
    pub(super) fn note_surface(&self, tools: &[Value], complete: bool) {
        if self.loaded.pins.is_empty() {
            return;
        }
        let mut surface = lock(&self.surface);
        for name in self.loaded.pins.keys() {
            let found = tools
                .iter()
                .find(|tool| tool.get("name").and_then(Value::as_str) == Some(name.as_str()));
            match found {
                Some(tool) => {
                    surface.insert(name.clone(), Some(pins::sha256(&pins::descriptor(tool))));
                }
                None if complete => {
                    surface.insert(name.clone(), None);
                }
                None => {}
            }
        }
    }

    /// Whether a listed tool is the one pinned (a tool without a pin always is).
    pub(super) fn matches_pin(&self, name: &str, tool: &Value) -> bool {
        self.loaded
            .pins
            .get(name)
            .is_none_or(|pin| pins::sha256(&pins::descriptor(tool)) == pin.sha256)
    }

    /// The capabilities a host is offered for the upstream's `capabilities`.
    pub(super) fn offered(&self, upstream: Option<&Value>) -> Value {
        era::offered_capabilities(upstream.unwrap_or(&json!({})), &self.allowed)
    }
}
