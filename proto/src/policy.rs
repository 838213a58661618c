//! The idle-CPU search policies by name: one type that the command line
//! (clap), the socket, the statistics and results files (serde) all parse
//! and print through the same two functions, `name()` and `from_str()`,
//! and its value in BPF. Their math is the scheduler's (policy.rs there,
//! and the BPF).

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::intf;

/// Declares the rules from intf.h's SISU_RULES table, one line each
/// (proto's build script writes them): the variant, its name (the command
/// line, the socket, the statistics and results files all use it), its
/// value in BPF's `enum sisu_policy`, whether it can be judged in the
/// shadow, and its line in --help (the rules auto may choose are
/// `Policy::AUTO_CANDIDATES`, written beside). Its depth (or decision)
/// is defined once, in BPF's `rule_depth()` (src/bpf/depth.h).
macro_rules! rules {
    ($($variant:ident $name:literal $bpf:ident $shadow:literal $about:literal;)*) => {
        /// How many CPUs of the target's LLC a wakeup may search for an idle one.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub enum Policy {
            $($variant,)*
        }

        impl Policy {
            pub const ALL: &'static [Policy] = &[$(Policy::$variant,)*];

            /// The value of `enum sisu_policy` in BPF.
            pub fn to_bpf(self) -> u32 {
                match self {
                    $(Policy::$variant => intf::$bpf,)*
                }
            }

            pub fn name(self) -> &'static str {
                match self {
                    $(Policy::$variant => $name,)*
                }
            }

            /// One line for --help.
            pub fn about(self) -> &'static str {
                match self {
                    $(Policy::$variant => $about,)*
                }
            }

            /// Whether the rule can be judged beside another one.
            pub fn can_shadow(self) -> bool {
                match self {
                    $(Policy::$variant => $shadow,)*
                }
            }
        }
    };
}

include!(concat!(env!("OUT_DIR"), "/rules.rs"));

/// SIS_UTIL, the kernel's rule since 6.0, is the one a start without
/// --policy runs.
impl Default for Policy {
    fn default() -> Self {
        Policy::Util
    }
}

impl Policy {
    pub fn from_bpf(v: u32) -> Option<Self> {
        Self::ALL.iter().copied().find(|p| p.to_bpf() == v)
    }

    /// Every rule's name, for messages.
    pub fn names() -> String {
        Self::ALL
            .iter()
            .map(|p| p.name())
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// The names of the rules that can shadow, for messages.
    pub fn shadow_names() -> String {
        Self::ALL
            .iter()
            .filter(|p| p.can_shadow())
            .map(|p| p.name())
            .collect::<Vec<_>>()
            .join(", ")
    }
}

impl fmt::Display for Policy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Policy {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        Policy::ALL
            .iter()
            .copied()
            .find(|p| p.name() == s)
            .ok_or_else(|| format!("unknown policy {s:?} ({})", Policy::names()))
    }
}

impl clap::ValueEnum for Policy {
    fn value_variants<'a>() -> &'a [Self] {
        Policy::ALL
    }

    fn to_possible_value(&self) -> Option<clap::builder::PossibleValue> {
        Some(clap::builder::PossibleValue::new(self.name()).help(self.about()))
    }
}

impl Serialize for Policy {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

impl<'de> Deserialize<'de> for Policy {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let name = String::deserialize(d)?;
        name.parse().map_err(serde::de::Error::custom)
    }
}

/// The rules judged beside the active policy at every scan, each with its
/// own state, on the same wakeups: none ("off"), some ("prop,full") or
/// every rule that can be ("all"). Kept in `Policy::ALL` order, each once,
/// so that one set has one spelling.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Shadow(Vec<Policy>);

impl Shadow {
    pub fn off() -> Self {
        Shadow(Vec::new())
    }

    /// Every rule that can be judged in the shadow.
    pub fn all() -> Self {
        Self::of(Policy::ALL.iter().copied())
    }

    /// The set of `rules`; those that cannot shadow are left out.
    pub fn of(rules: impl IntoIterator<Item = Policy>) -> Self {
        let mut v: Vec<Policy> = rules.into_iter().filter(|p| p.can_shadow()).collect();
        v.sort_by_key(|p| p.to_bpf());
        v.dedup();
        Shadow(v)
    }

    pub fn rules(&self) -> &[Policy] {
        &self.0
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// `cfg.shadows` in BPF: a bit per `enum sisu_policy`.
    pub fn to_bpf(&self) -> u32 {
        self.0.iter().fold(0, |m, p| m | 1 << p.to_bpf())
    }
}

impl FromStr for Shadow {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "off" => return Ok(Shadow::off()),
            "all" => return Ok(Shadow::all()),
            _ => {}
        }
        let mut rules = Vec::new();
        for name in s.split(',') {
            match name.trim().parse::<Policy>() {
                Ok(p) if p.can_shadow() => rules.push(p),
                _ => {
                    return Err(format!(
                        "expected off, all, or a comma-separated list of {}; got {name:?}",
                        Policy::shadow_names()
                    ))
                }
            }
        }
        Ok(Shadow::of(rules))
    }
}

impl fmt::Display for Shadow {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0.is_empty() {
            return f.write_str("off");
        }
        let names: Vec<&str> = self.0.iter().map(|p| p.name()).collect();
        f.write_str(&names.join(","))
    }
}

impl Serialize for Shadow {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.to_string())
    }
}

impl<'de> Deserialize<'de> for Shadow {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        // The settings of a version with one shadow policy said null
        // for none.
        match Option::<String>::deserialize(d)? {
            Some(name) => name.parse().map_err(serde::de::Error::custom),
            None => Ok(Shadow::off()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_spelling_for_every_reader() {
        for &p in Policy::ALL {
            assert_eq!(p.name().parse::<Policy>(), Ok(p));
            let json = serde_json::to_string(&p).unwrap();
            assert_eq!(json, format!("\"{}\"", p.name()));
            assert_eq!(serde_json::from_str::<Policy>(&json).unwrap(), p);
            let clap = <Policy as clap::ValueEnum>::from_str(p.name(), false);
            assert_eq!(clap, Ok(p));
        }
        assert!("fast".parse::<Policy>().is_err());
        assert!(serde_json::from_str::<Policy>("\"Util\"").is_err());
    }

    #[test]
    fn shadow_sets_have_one_spelling() {
        assert_eq!("off".parse::<Shadow>(), Ok(Shadow::off()));
        assert_eq!("prop".parse::<Shadow>(), Ok(Shadow(vec![Policy::Prop])));
        let set: Shadow = "full, prop,prop".parse().unwrap();
        assert_eq!(set.rules(), &[Policy::Prop, Policy::Full]);
        assert_eq!(set.to_string(), "prop,full");
        assert_eq!(set.to_bpf(), 1 << 1 | 1 << 2);
        let all: Shadow = "all".parse().unwrap();
        // Every rule the table lets shadow, in the table's order.
        let shadows: Vec<Policy> = Policy::ALL
            .iter()
            .copied()
            .filter(|p| p.can_shadow())
            .collect();
        assert_eq!(all.rules(), &shadows[..]);
        assert!(all.to_string().starts_with("util,prop,full,none"));
        assert!(!all.rules().contains(&Policy::Builtin));
        assert!(!all.rules().contains(&Policy::Auto));
        for bad in ["builtin", "prop,builtin", "auto", "prop,,full", "fast", ""] {
            assert!(bad.parse::<Shadow>().is_err(), "{bad}");
        }
        assert_eq!(Shadow::off().to_string(), "off");
        let json = serde_json::to_string(&set).unwrap();
        assert_eq!(serde_json::from_str::<Shadow>(&json).unwrap(), set);
        assert_eq!(
            serde_json::from_str::<Shadow>("null").unwrap(),
            Shadow::off()
        );
    }

    #[test]
    fn bpf_values_round_trip() {
        for &p in Policy::ALL {
            assert_eq!(Policy::from_bpf(p.to_bpf()), Some(p));
        }
        // Every value of the BPF enum has one rule, every rule one value.
        assert_eq!(
            Policy::ALL.len(),
            intf::sisu_policy_SISU_NR_POLICIES as usize
        );
        assert_eq!(Policy::from_bpf(intf::sisu_policy_SISU_NR_POLICIES), None);
        assert!(!Policy::Builtin.can_shadow());
    }
}
