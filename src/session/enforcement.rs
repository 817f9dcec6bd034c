//! How a session enforces its surface: one value, decided from the flags
//! before anything is set up and settled with the policy's `mode` once the
//! policy is read. Every place that acts on the mode (the backstop, the
//! filter's trapping, the supervisor's answers, the proxy, the trail's mode
//! record) asks this value, never the flags.

use super::RunError;
use crate::policy::file::RunMode;

/// The enforcement mode of a session.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Enforcement {
    /// Every path call trapped and decided, over the Landlock backstop.
    #[default]
    Full,
    /// As full, leaving to Landlock what it decides exactly (`--fast`,
    /// `mode = "fast"` in a policy).
    Fast,
    /// Nothing enforced but the carve-outs; what enforcement would refuse
    /// is recorded as `would_deny` (`--learn`).
    Learn,
    /// Every call decided, without the Landlock backstop (`--no-landlock`,
    /// for measurements: a CONTINUE answer can then be raced).
    Unbacked,
    /// Every notification continued unread (`--bench-floor`, the floor of
    /// `interpose bench`): enforces nothing.
    Floor,
}

impl Enforcement {
    /// The mode the flags ask for. Fast mode leaves decisions to Landlock,
    /// so it cannot be had with a flag that removes Landlock.
    pub fn from_flags(fast: bool, learn: bool, no_landlock: bool, floor: bool) -> Result<Enforcement, RunError> {
        Ok(match () {
            _ if floor => Enforcement::Floor,
            _ if fast && (learn || no_landlock) => return Err(RunError::FastNeedsLandlock),
            _ if fast => Enforcement::Fast,
            _ if learn => Enforcement::Learn,
            _ if no_landlock => Enforcement::Unbacked,
            _ => Enforcement::Full,
        })
    }

    /// Settled with the policy's `mode`: a policy asking for fast mode
    /// makes a full session fast. A flag that removes Landlock cannot be
    /// fast; `--learn` learns, and says the policy's mode is not used.
    pub fn with_policy(self, mode: Option<RunMode>) -> Result<(Enforcement, Option<&'static str>), RunError> {
        match (self, mode) {
            (Enforcement::Full, Some(RunMode::Fast)) => Ok((Enforcement::Fast, None)),
            (Enforcement::Unbacked, Some(RunMode::Fast)) => Err(RunError::FastNeedsLandlock),
            (Enforcement::Learn, Some(RunMode::Fast)) => {
                Ok((self, Some("the policy's mode = \"fast\" is not used while learning (--learn)")))
            }
            _ => Ok((self, None)),
        }
    }

    /// Whether the command runs under the Landlock backstop.
    pub fn backstop(self) -> bool {
        matches!(self, Enforcement::Full | Enforcement::Fast)
    }

    /// Whether refusals are only recorded.
    pub fn learns(self) -> bool {
        self == Enforcement::Learn
    }

    /// Whether what Landlock decides exactly is left untrapped.
    pub fn fast(self) -> bool {
        self == Enforcement::Fast
    }

    /// Whether nothing is decided at all.
    pub fn floor(self) -> bool {
        self == Enforcement::Floor
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_flags_give_one_mode() {
        let mode = |fast, learn, no_landlock, floor| Enforcement::from_flags(fast, learn, no_landlock, floor).ok();
        assert_eq!(mode(false, false, false, false), Some(Enforcement::Full));
        assert_eq!(mode(true, false, false, false), Some(Enforcement::Fast));
        assert_eq!(mode(false, true, false, false), Some(Enforcement::Learn));
        // Learning runs without Landlock anyway.
        assert_eq!(mode(false, true, true, false), Some(Enforcement::Learn));
        assert_eq!(mode(false, false, true, false), Some(Enforcement::Unbacked));
        assert_eq!(mode(true, true, true, true), Some(Enforcement::Floor));
        assert!(matches!(Enforcement::from_flags(true, false, true, false), Err(RunError::FastNeedsLandlock)));
        assert!(matches!(Enforcement::from_flags(true, true, false, false), Err(RunError::FastNeedsLandlock)));
    }

    #[test]
    fn a_fast_policy_makes_only_a_full_session_fast() {
        let fast = Some(RunMode::Fast);
        assert_eq!(Enforcement::Full.with_policy(fast).unwrap(), (Enforcement::Fast, None));
        assert_eq!(Enforcement::Full.with_policy(None).unwrap(), (Enforcement::Full, None));
        assert_eq!(Enforcement::Full.with_policy(Some(RunMode::Full)).unwrap().0, Enforcement::Full);
        assert!(matches!(Enforcement::Unbacked.with_policy(fast), Err(RunError::FastNeedsLandlock)));
        let (learn, note) = Enforcement::Learn.with_policy(fast).unwrap();
        assert_eq!(learn, Enforcement::Learn);
        assert!(note.is_some_and(|n| n.contains("not used")));
        assert_eq!(Enforcement::Floor.with_policy(fast).unwrap(), (Enforcement::Floor, None));
    }

    #[test]
    fn only_full_and_fast_have_the_backstop() {
        let all = [Enforcement::Full, Enforcement::Fast, Enforcement::Learn, Enforcement::Unbacked, Enforcement::Floor];
        let backed: Vec<_> = all.into_iter().filter(|e| e.backstop()).collect();
        assert_eq!(backed, [Enforcement::Full, Enforcement::Fast]);
    }
}
