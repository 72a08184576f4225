//! Every experiment definition shipped in the binary, by id.

use super::Definition;
use crate::error::Error;

/// (id, TOML text), in the order of EXPERIMENTS.md.
pub const EXPERIMENTS: &[(&str, &str)] = &[
    ("ecnstar-table1", include_str!("../../../../experiments/ecnstar/table1.toml")),
    ("ecnstar-fig2", include_str!("../../../../experiments/ecnstar/fig2.toml")),
    ("ecnstar-fig4", include_str!("../../../../experiments/ecnstar/fig4.toml")),
    ("ecnstar-fig5-8", include_str!("../../../../experiments/ecnstar/fig5-8.toml")),
    ("ecnstar-fig9", include_str!("../../../../experiments/ecnstar/fig9.toml")),
    ("ecnstar-fig10-11", include_str!("../../../../experiments/ecnstar/fig10-11.toml")),
    ("ecnstar-fig12", include_str!("../../../../experiments/ecnstar/fig12.toml")),
    ("pmsb-fig1", include_str!("../../../../experiments/pmsb/fig1.toml")),
    ("pmsb-fig2", include_str!("../../../../experiments/pmsb/fig2.toml")),
    ("pmsb-fig3", include_str!("../../../../experiments/pmsb/fig3.toml")),
    ("pmsb-fig4-5", include_str!("../../../../experiments/pmsb/fig4-5.toml")),
    ("pmsb-fig6-7", include_str!("../../../../experiments/pmsb/fig6-7.toml")),
    ("pmsb-fig8-10", include_str!("../../../../experiments/pmsb/fig8-10.toml")),
    ("pmsb-fig11-12", include_str!("../../../../experiments/pmsb/fig11-12.toml")),
    ("pmsb-fig13", include_str!("../../../../experiments/pmsb/fig13.toml")),
    ("pmsb-fig14", include_str!("../../../../experiments/pmsb/fig14.toml")),
    ("pmsb-fig15", include_str!("../../../../experiments/pmsb/fig15.toml")),
    ("pmsb-ls-dwrr", include_str!("../../../../experiments/pmsb/ls-dwrr.toml")),
    ("pmsb-ls-wfq", include_str!("../../../../experiments/pmsb/ls-wfq.toml")),
    ("mqecn-fig1", include_str!("../../../../experiments/mqecn/fig1.toml")),
    ("mqecn-fig2", include_str!("../../../../experiments/mqecn/fig2.toml")),
    ("mqecn-fig3", include_str!("../../../../experiments/mqecn/fig3.toml")),
    ("mqecn-fig6", include_str!("../../../../experiments/mqecn/fig6.toml")),
    ("mqecn-fig7-8", include_str!("../../../../experiments/mqecn/fig7-8.toml")),
    ("mqecn-ls", include_str!("../../../../experiments/mqecn/ls.toml")),
    ("mqecn-ls-32q", include_str!("../../../../experiments/mqecn/ls-32q.toml")),
    ("mqecn-ls-ecnstar", include_str!("../../../../experiments/mqecn/ls-ecnstar.toml")),
    ("mqecn-ls-params", include_str!("../../../../experiments/mqecn/ls-params.toml")),
    ("ecnsharp-fig2-3", include_str!("../../../../experiments/ecnsharp/fig2-3.toml")),
    ("ecnsharp-fig9-10", include_str!("../../../../experiments/ecnsharp/fig9-10.toml")),
    ("ecnsharp-fig11", include_str!("../../../../experiments/ecnsharp/fig11.toml")),
    ("ecnsharp-fig21", include_str!("../../../../experiments/ecnsharp/fig21.toml")),
    ("ecnsharp-fig22", include_str!("../../../../experiments/ecnsharp/fig22.toml")),
    ("ecnsharp-ls", include_str!("../../../../experiments/ecnsharp/ls.toml")),
    ("ecnsharp-fig16", include_str!("../../../../experiments/ecnsharp/fig16.toml")),
    ("ecnsharp-fig17", include_str!("../../../../experiments/ecnsharp/fig17.toml")),
    ("ecnsharp-fig18", include_str!("../../../../experiments/ecnsharp/fig18.toml")),
    ("ecnsharp-fig20", include_str!("../../../../experiments/ecnsharp/fig20.toml")),
];

pub fn ids() -> Vec<&'static str> {
    EXPERIMENTS.iter().map(|e| e.0).collect()
}

pub fn get(id: &str) -> Result<Definition, Error> {
    let text = EXPERIMENTS
        .iter()
        .find(|e| e.0 == id)
        .map(|e| e.1)
        .ok_or_else(|| Error::config("ID", format!("unknown experiment `{id}`; known: {}", ids().join(", "))))?;
    let d = Definition::parse(text)?;
    if d.id != id {
        return Err(Error::config("id", format!("definition for `{id}` says id = `{}`", d.id)));
    }
    Ok(d)
}

#[cfg(test)]
mod tests {
    #[test]
    fn every_definition_parses() {
        for id in super::ids() {
            super::get(id).unwrap_or_else(|e| panic!("{id}: {e}"));
        }
    }
}
