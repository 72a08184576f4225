//! Scenarios shipped inside the library (and so inside the CLI and the Python wheel).

/// (name, TOML text) of every canonical scenario under `scenarios/`.
pub const SCENARIOS: &[(&str, &str)] = &[
    ("dctcp-8flows", include_str!("../../../scenarios/dctcp-8flows.toml")),
    ("emu-dumbbell-2flows", include_str!("../../../scenarios/emu-dumbbell-2flows.toml")),
    ("emu-ecnstar-2flows", include_str!("../../../scenarios/emu-ecnstar-2flows.toml")),
    ("leafspine-mqecn", include_str!("../../../scenarios/leafspine-mqecn.toml")),
];

/// A shipped scenario's text by name.
pub fn scenario(name: &str) -> Option<&'static str> {
    SCENARIOS.iter().find(|(n, _)| *n == name).map(|(_, t)| *t)
}
