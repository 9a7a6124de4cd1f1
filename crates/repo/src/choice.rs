//! A closed set of named values a user picks by name: a report format, a verdict, a route. The
//! names and their help live with the type, in the library that owns it; the command line offers
//! them from here, so no library crate needs clap.

/// A closed set of named values.
pub trait Choice: Copy + Send + Sync + Sized + 'static {
    /// Every value, in the order help lists them.
    const ALL: &'static [Self];

    /// The name a user writes.
    fn name(self) -> &'static str;

    /// One line of help, as `--help` shows it.
    fn help(self) -> &'static str;

    /// The value called `name`, exactly.
    fn from_name(name: &str) -> Option<Self> {
        Self::ALL.iter().copied().find(|value| value.name() == name)
    }

    /// The value called `name`, in any case (`JUnit` for `junit`).
    fn from_name_ignoring_case(name: &str) -> Option<Self> {
        Self::ALL
            .iter()
            .copied()
            .find(|value| value.name().eq_ignore_ascii_case(name))
    }

    /// Every name, comma-separated, for an error message.
    fn names() -> String {
        Self::ALL
            .iter()
            .map(|value| value.name())
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// Declares an enum whose variants are [`Choice`]s: each variant's doc comment is its help and
/// the literal after it its name.
///
/// ```
/// toolgate_repo::choices! {
///     /// How a report is written.
///     #[derive(Debug, Clone, Copy, PartialEq, Eq)]
///     pub enum Format {
///         /// For a terminal.
///         Human = "human",
///         /// Stable and documented.
///         Json = "json",
///     }
/// }
/// use toolgate_repo::Choice;
/// assert_eq!(Format::from_name("json"), Some(Format::Json));
/// assert_eq!(Format::Human.help(), "For a terminal.");
/// ```
#[macro_export]
macro_rules! choices {
    (
        $(#[$meta:meta])*
        $vis:vis enum $name:ident {
            $(
                $(#[doc = $help:literal])+
                $(#[$variant_meta:meta])*
                $variant:ident = $text:literal,
            )+
        }
    ) => {
        $(#[$meta])*
        $vis enum $name {
            $(
                $(#[doc = $help])+
                $(#[$variant_meta])*
                $variant,
            )+
        }

        impl $crate::Choice for $name {
            const ALL: &'static [Self] = &[$($name::$variant),+];

            fn name(self) -> &'static str {
                match self {
                    $($name::$variant => $text,)+
                }
            }

            fn help(self) -> &'static str {
                match self {
                    $($name::$variant => {
                        // A doc comment's lines, each after its leading space, joined by spaces
                        // as clap joins a paragraph.
                        const HELP: &str = concat!($($help, "\n"),+);
                        static JOINED: ::std::sync::OnceLock<String> = ::std::sync::OnceLock::new();
                        JOINED.get_or_init(|| {
                            HELP.lines().map(str::trim).collect::<Vec<_>>().join(" ")
                        })
                    })+
                }
            }
        }
    };
}
