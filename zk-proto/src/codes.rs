//! Macros for wire code tables (opcodes, error codes, event types, states).

/// An enum of known wire codes that keeps unknown values representable as `Other(i32)`.
macro_rules! open_code_enum {
    (
        $(#[$meta:meta])*
        pub enum $name:ident {
            $( $(#[$vmeta:meta])* $variant:ident = $value:expr ),* $(,)?
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        #[non_exhaustive]
        pub enum $name {
            $( $(#[$vmeta])* $variant, )*
            /// A value this codec does not know; kept so nothing is lost.
            Other(i32),
        }

        impl $name {
            /// Every named value, in declaration order.
            pub const KNOWN: &'static [$name] = &[$($name::$variant),*];

            /// Maps a wire value; unknown values become `Other`.
            pub const fn from_i32(value: i32) -> Self {
                match value {
                    $( $value => $name::$variant, )*
                    other => $name::Other(other),
                }
            }

            /// The wire value.
            pub const fn as_i32(self) -> i32 {
                match self {
                    $( $name::$variant => $value, )*
                    $name::Other(value) => value,
                }
            }
        }

        impl From<i32> for $name {
            fn from(value: i32) -> Self {
                Self::from_i32(value)
            }
        }

        impl From<$name> for i32 {
            fn from(value: $name) -> i32 {
                value.as_i32()
            }
        }

        impl $crate::Record for $name {
            fn encode(&self, buf: &mut ::bytes::BytesMut) {
                ::bytes::BufMut::put_i32(buf, self.as_i32());
            }
            fn decode(buf: &mut ::bytes::Bytes) -> Result<Self, $crate::DecodeError> {
                Ok(Self::from_i32($crate::codec::get_i32(buf)?))
            }
        }
    };
}
pub(crate) use open_code_enum;
