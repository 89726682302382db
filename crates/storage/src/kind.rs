//! Record kinds. Each kind has a stable one-byte code used in keys and in the codec.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// Not one of the kinds (an [`crate::InputError`] where it is reported).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "unknown kind {input:?} (kinds: decision, task, entity, relation, observation, pattern, gotcha, learning, error_fix, episode, knowledge, preference, brief, conversation, message, metrics)"
)]
pub struct UnknownKind {
    /// What was given.
    pub input: String,
}

macro_rules! kinds {
    ($( $(#[$doc:meta])* $variant:ident = $code:literal, $name:literal; )*) => {
        /// The kind of a record. Codes are part of the file format: never reuse or renumber one.
        #[derive(Copy, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Debug)]
        #[repr(u8)]
        #[non_exhaustive]
        pub enum Kind {
            $( $(#[$doc])* $variant = $code, )*
        }

        impl Kind {
            /// Every kind, in code order.
            pub const ALL: &'static [Kind] = &[ $( Kind::$variant, )* ];

            /// The stable one-byte code.
            pub const fn code(self) -> u8 {
                self as u8
            }

            /// The kind for a code, if it is one.
            pub const fn from_code(code: u8) -> Option<Kind> {
                match code {
                    $( $code => Some(Kind::$variant), )*
                    _ => None,
                }
            }

            /// The snake_case name used on the command line and in JSON.
            pub const fn name(self) -> &'static str {
                match self {
                    $( Kind::$variant => $name, )*
                }
            }
        }
    };
}

kinds! {
    /// An architecture or project decision, with rationale and status.
    Decision = 1, "decision";
    /// A unit of work with status history, priority and dependencies.
    Task = 2, "task";
    /// A person, technology, component, service or concept.
    Entity = 3, "entity";
    /// A directed, typed link between two entities or components.
    Relation = 4, "relation";
    /// A time-stamped fact about an entity.
    Observation = 5, "observation";
    /// A code pattern, with category and example.
    Pattern = 6, "pattern";
    /// A pitfall with its problem, solution and severity.
    Gotcha = 7, "gotcha";
    /// Something learned, in the append-only learnings log.
    Learning = 8, "learning";
    /// An error and the fix that resolved it.
    ErrorFix = 9, "error_fix";
    /// An episode of agent work (code generation, fix, review, research), usually embedded.
    Episode = 10, "episode";
    /// Role knowledge of an agent, with confidence that grows with reinforcement.
    Knowledge = 11, "knowledge";
    /// A preference (of a user or an agent).
    Preference = 12, "preference";
    /// The project brief.
    Brief = 13, "brief";
    /// A conversation session (its messages are `message` records).
    Conversation = 14, "conversation";
    /// One message of a conversation.
    Message = 15, "message";
    /// Task completion metrics of an agent.
    Metrics = 16, "metrics";
}

impl Kind {
    /// Whether the importance sets a time to live (1, 7, 30, 90 days for importance 1 to 4,
    /// see [`crate::TTL_DAYS`]): the sections of scoped memory (learnings, errors and their
    /// fixes, patterns, preferences), as the memory design gives them one. Elsewhere the
    /// importance only ranks (a decision or a task does not expire by it; episodes are
    /// pruned by age instead).
    pub const fn has_ttl(self) -> bool {
        matches!(self, Kind::Learning | Kind::ErrorFix | Kind::Pattern | Kind::Preference)
    }
}

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Kind {
    type Err = UnknownKind;

    /// Accepts the snake_case name, with `-` for `_`, in any case; plurals are accepted too
    /// (`decisions`), as are `error-fix` and `errorfix`.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let norm: String = s.trim().to_ascii_lowercase().replace('-', "_");
        let singular = norm.strip_suffix('s').unwrap_or(&norm);
        Kind::ALL
            .iter()
            .copied()
            .find(|k| {
                let n = k.name();
                n == norm || n == singular || n.replace('_', "") == norm.replace('_', "")
            })
            .ok_or_else(|| UnknownKind { input: s.to_string() })
    }
}

impl Serialize for Kind {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        if serializer.is_human_readable() {
            serializer.serialize_str(self.name())
        } else {
            serializer.serialize_u8(self.code())
        }
    }
}

impl<'de> Deserialize<'de> for Kind {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        if deserializer.is_human_readable() {
            let s = String::deserialize(deserializer)?;
            s.parse().map_err(serde::de::Error::custom)
        } else {
            let code = u8::deserialize(deserializer)?;
            Kind::from_code(code).ok_or_else(|| serde::de::Error::custom(format!("unknown kind code {code}")))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_round_trip_and_names_parse() -> Result<(), UnknownKind> {
        for k in Kind::ALL {
            assert_eq!(Kind::from_code(k.code()), Some(*k));
            assert_eq!(k.name().parse::<Kind>()?, *k);
        }
        assert_eq!("error-fix".parse::<Kind>()?, Kind::ErrorFix);
        assert_eq!("Decisions".parse::<Kind>()?, Kind::Decision);
        assert!("decsion".parse::<Kind>().is_err());
        Ok(())
    }
}
