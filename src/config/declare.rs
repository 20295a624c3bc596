//! The macro that declares one area of settings in one place: each key's type, flag, environment
//! variables, default and doc line. From that one declaration it makes the area's file section
//! (serde, unknown keys rejected), its flag values, its effective settings and the key table the
//! docs and `config show` print, so adding a key is one entry and nothing can drift.

/// Declares an area (see the module docs). Per key: `/// doc` (one or more lines) then
/// `name: Type, flag Some("--x") | None, env ["VAR", …], default <Option<Type> expr>[, shown "<words>"];`.
/// The docs' default is the default value as `config show` prints it; `shown` replaces it only
/// where that cannot say it (no value: the consumer's own; a path that depends on the machine).
macro_rules! settings_area {
    (
        $(#[doc = $area_doc:literal])*
        $section:literal => $area:ident, $file:ident, $flags:ident {
            $(
                $(#[doc = $doc:literal])+
                $key:ident: $ty:ty,
                flag $flag:expr,
                env [$($env:literal),*],
                default $default:expr
                $(, shown $shown:literal)?;
            )*
        }
    ) => {
        $(#[doc = $area_doc])*
        #[derive(Clone, Debug)]
        #[non_exhaustive]
        pub struct $area {
            $(
                $(#[doc = $doc])+
                pub $key: $crate::config::Setting<$ty>,
            )*
        }

        #[doc = concat!("The `[", $section, "]` section of the file, as written.")]
        #[derive(Debug, Default, serde::Deserialize)]
        #[serde(deny_unknown_fields, rename_all = "kebab-case")]
        pub struct $file {
            $(
                $(#[doc = $doc])+
                $key: Option<toml::Spanned<$ty>>,
            )*
        }

        #[doc = concat!("The `[", $section, "]` values given as flags on this command line.")]
        #[derive(Debug, Default)]
        #[non_exhaustive]
        pub struct $flags {
            $(
                $(#[doc = $doc])+
                pub $key: Option<$ty>,
            )*
        }

        impl $crate::config::Area for $area {
            type File = $file;
            type Flags = $flags;
        }

        impl $area {
            /// The section's name in the file.
            pub const SECTION: &'static str = $section;

            /// Every key of the area, as declared.
            pub fn keys() -> Vec<$crate::config::KeyInfo> {
                vec![$(
                    $crate::config::KeyInfo {
                        section: $section,
                        name: $crate::config::kebab(stringify!($key)),
                        kind: <$ty as $crate::config::value::SettingValue>::KIND,
                        flag: $flag,
                        env: &[$($env),*],
                        default: $crate::config::default_text::<$ty>(
                            $default.as_ref(),
                            None $(.or(Some($shown)))?,
                        ),
                        shown_override: None $(.or(Some($shown)))?,
                        doc: concat!($($doc, " "),+).trim(),
                    },
                )*]
            }

            /// Each key from its flag, else its first set environment variable, else the file, else its default.
            pub(crate) fn resolve(
                file: Option<$file>,
                flags: $flags,
                input: &$crate::config::Inputs<'_>,
            ) -> Result<Self, $crate::config::ConfigError> {
                let file = file.unwrap_or_default();
                Ok($area {
                    $(
                        $key: input.resolve(
                            $section,
                            stringify!($key),
                            flags.$key,
                            $flag,
                            &[$($env),*],
                            file.$key,
                            $default,
                        )?,
                    )*
                })
            }

            /// Each key's effective value and where it came from, in declaration order.
            pub fn shown(&self) -> Vec<$crate::config::ShownSetting> {
                vec![$(
                    $crate::config::ShownSetting::of(
                        $section,
                        stringify!($key),
                        &self.$key,
                    ),
                )*]
            }
        }
    };
}

pub(crate) use settings_area;

/// Declares the whole set of areas once: `section => Area;` per area, in the order
/// `config show` and the docs list them. Makes [`Settings`](super::Settings) (one field per area,
/// plus the file read), the file's root (an unknown section is an error), [`Flags`](super::Flags),
/// and the key table and shown values over every area. Adding an area is one line here.
macro_rules! settings_root {
    ($($field:ident => $area:ident;)*) => {
        /// Every effective setting, one struct per area (one file section each).
        #[derive(Clone, Debug)]
        #[non_exhaustive]
        pub struct Settings {
            /// The file they were read from, if one was.
            pub file: Option<std::path::PathBuf>,
            $(
                #[doc = concat!("`[", stringify!($field), "]`.")]
                pub $field: $area,
            )*
        }

        /// The file's sections, as written; a section not listed is an unknown key.
        #[derive(Debug, Default, serde::Deserialize)]
        #[serde(deny_unknown_fields)]
        struct FileRoot {
            $(
                #[doc = concat!("`[", stringify!($field), "]`.")]
                $field: Option<<$area as Area>::File>,
            )*
        }

        /// The values given as flags on this command line, by area.
        #[derive(Debug, Default)]
        #[non_exhaustive]
        pub struct Flags {
            $(
                #[doc = concat!("`[", stringify!($field), "]`'s flags.")]
                pub $field: <$area as Area>::Flags,
            )*
        }

        impl Settings {
            /// Every declared key, area by area.
            pub fn keys() -> Vec<KeyInfo> {
                [$($area::keys()),*].concat()
            }

            /// Every effective value and its source, area by area.
            pub fn shown(&self) -> Vec<ShownSetting> {
                [$(self.$field.shown()),*].concat()
            }

            /// Each area from its part of `root`, `flags` and `input`.
            fn resolve_areas(
                file: Option<std::path::PathBuf>,
                root: FileRoot,
                flags: Flags,
                input: &Inputs<'_>,
            ) -> Result<Self, ConfigError> {
                Ok(Settings { file, $($field: $area::resolve(root.$field, flags.$field, input)?,)* })
            }
        }
    };
}

pub(crate) use settings_root;
