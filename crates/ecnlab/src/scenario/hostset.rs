//! Host selections in configs: `3`, `[1, 2, 5]`, or `"1-8,10"`.

use serde::{de, Deserialize, Deserializer, Serialize, Serializer};

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HostSet(pub Vec<u32>);

/// Entries a host set may expand to. Topologies have at most 10⁵ hosts; a set may name a host more than once
/// (one flow each), but a short string of ranges must not expand to billions of entries while it is parsed.
pub const MAX_ENTRIES: usize = 1 << 20;

impl std::str::FromStr for HostSet {
    type Err = String;
    fn from_str(s: &str) -> Result<HostSet, String> {
        let mut v = Vec::new();
        for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let bad = || format!("`{part}` is not a host index or range like 1-8");
            match part.split_once('-') {
                Some((a, b)) => {
                    let (a, b): (u32, u32) =
                        (a.trim().parse().map_err(|_| bad())?, b.trim().parse().map_err(|_| bad())?);
                    if a > b {
                        return Err(format!("range `{part}` is empty"));
                    }
                    if (b - a) as usize >= MAX_ENTRIES - v.len() {
                        return Err(too_many());
                    }
                    v.extend(a..=b);
                }
                None => v.push(part.parse().map_err(|_| bad())?),
            }
            if v.len() > MAX_ENTRIES {
                return Err(too_many());
            }
        }
        if v.is_empty() {
            return Err("empty host set".into());
        }
        Ok(HostSet(v))
    }
}

fn too_many() -> String {
    format!("expands to more than {MAX_ENTRIES} hosts; a host set holds 1 to {MAX_ENTRIES} entries")
}

impl Serialize for HostSet {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(s)
    }
}

impl<'de> Deserialize<'de> for HostSet {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            One(u32),
            Many(Vec<u32>),
            Text(String),
        }
        match Raw::deserialize(d).map_err(|_| de::Error::custom("expected a host index, a list, or \"1-8\""))? {
            Raw::One(h) => Ok(HostSet(vec![h])),
            Raw::Many(v) if v.len() > MAX_ENTRIES => Err(de::Error::custom(too_many())),
            Raw::Many(v) if !v.is_empty() => Ok(HostSet(v)),
            Raw::Many(_) => Err(de::Error::custom("empty host list")),
            Raw::Text(s) => s.parse().map_err(de::Error::custom),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn parses_ranges() {
        assert_eq!("1-3,7".parse::<HostSet>().unwrap().0, vec![1, 2, 3, 7]);
        assert!("3-1".parse::<HostSet>().is_err());
        assert!("x".parse::<HostSet>().is_err());
        assert!("0-1048575".parse::<HostSet>().is_ok());
        let big = vec!["0-99999"; 20_000].join(",");
        assert!(big.parse::<HostSet>().unwrap_err().contains("more than 1048576"));
    }
}
