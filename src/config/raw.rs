//! The file's shape, derived with serde (docs/architecture.md §5): one struct per table, every
//! value spanned.
//!
//! Reading never fails on a value of the wrong type: leaves are [`Value`]s (any TOML value), and
//! a table or array is a [`Shaped`], which holds what was found instead when the file has another
//! kind of value there. So `load.rs` sees every key at once and reports every problem, each at
//! its position. Unknown keys are kept aside with their positions ([`Record::unknown`]); the
//! known ones are the struct's fields, as serde names them.

use std::fmt;
use std::marker::PhantomData;

use serde::Deserialize;
use serde::de::value::{MapAccessDeserializer, StringDeserializer};
use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use toml::Spanned;

/// A key that may be absent.
pub(super) type Field<T = Value> = Option<Spanned<T>>;
/// A present table or array, as read or as found instead.
pub(super) type Spans<T> = Spanned<Shaped<T>>;
/// A table whose keys are the fields of `T`.
pub(super) type Table<T> = Field<Shaped<Record<T>>>;
/// An array of tables whose keys are the fields of `T`.
pub(super) type Tables<T> = Spans<Vec<Spanned<Shaped<Record<T>>>>>;
/// A table of free-form keys (signal or resource names).
pub(super) type Map = Field<Shaped<Entries>>;
/// An array of `T`.
pub(super) type Array<T> = Field<Shaped<Vec<Spanned<T>>>>;

/// The whole file.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct RawConfig {
    pub node_name: Field,
    pub kubeconfig: Field,
    pub standalone: Field,
    pub node_status_update_frequency: Field,
    pub node_status_report_frequency: Field,
    pub node_lease_duration_seconds: Field,
    pub lease_name: Field,
    pub lease_namespace: Field,
    pub only_status_reporter: Field,
    pub eviction_hard: Map,
    pub eviction_soft: Map,
    pub eviction_soft_grace_period: Map,
    pub eviction_minimum_reclaim: Map,
    pub eviction_pressure_transition_period: Field,
    pub merge_default_eviction_settings: Field,
    pub psi_thresholds: Map,
    pub feature_gates: Map,
    pub kube_reserved: Map,
    pub system_reserved: Map,
    #[serde(rename = "reservedSystemCPUs")]
    pub reserved_system_cpus: Field,
    pub proc_path: Field,
    pub cgroup_path: Field,
    pub nodefs_path: Field,
    pub imagefs_path: Field,
    pub health_address: Field,
    pub state_directory: Field,
    pub logging: Table<RawLogging>,
    pub fence: Table<RawFence>,
    pub peers: Table<RawPeers>,
    pub conditions: Option<Tables<RawCondition>>,
}

/// `[logging]`.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct RawLogging {
    pub target: Field,
    pub level: Field,
}

/// `[fence]`.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct RawFence {
    pub mode: Field,
    pub node_monitor_grace_period: Field,
    pub node_monitor_period: Field,
    pub unreachable_after: Field,
    pub safety_margin: Field,
    pub grace_period_cap: Field,
    pub cgroup_driver: Field,
    pub cgroup_version: Field,
    pub cgroup_root: Field,
    pub kubelet_server: Field,
    pub controller_manager_lease: Field,
}

/// `[peers]`.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct RawPeers {
    pub service: Field,
    pub port_name: Field,
    #[serde(rename = "static")]
    pub static_: Option<Tables<RawStaticPeer>>,
    pub listen: Field,
    pub key_file: Field,
    pub ask: Field,
    pub timeout: Field,
    pub interval: Field,
    pub without_peers: Field,
    pub whole_zone_cut_off: Field,
}

/// One `peers.static` entry.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct RawStaticPeer {
    pub node: Field,
    pub address: Field,
    pub zone: Field,
}

/// One `[[conditions]]` table.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct RawCondition {
    #[serde(rename = "type")]
    pub type_: Field,
    pub signals: Array<Value>,
    pub true_reason: Field,
    pub true_message: Field,
    pub false_reason: Field,
    pub false_message: Field,
    pub taint_key: Field,
    pub taint_effect: Field,
}

/// Any TOML value, as far as a leaf needs to know it; arrays and tables only say what they are.
#[derive(Clone, Debug, PartialEq)]
pub(super) enum Value {
    String(String),
    /// Wider than `i64` so that no integer TOML accepts makes reading fail.
    Integer(i128),
    Float(f64),
    Boolean(bool),
    Datetime(String),
    Array,
    Table,
}

impl Value {
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::String(s) => Some(s),
            _ => None,
        }
    }
}

/// How a value looks in a message: `string "ten"`, `integer 40`, `a table`.
impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::String(s) => write!(f, "string \"{s}\""),
            Value::Integer(i) => write!(f, "integer {i}"),
            // Messages show numbers as written (`Walker::mismatch`); this is the fallback.
            Value::Float(x) => write!(f, "float {x:?}"),
            Value::Boolean(b) => write!(f, "boolean {b}"),
            Value::Datetime(d) => write!(f, "datetime {d}"),
            Value::Array => f.write_str("an array"),
            Value::Table => f.write_str("a table"),
        }
    }
}

/// A table or an array read as `T`, or the value the file has there instead.
#[derive(Debug)]
pub(super) enum Shaped<T> {
    Read(T),
    Found(Value),
}

/// A table read into the struct `T`, with the keys that are not its fields.
#[derive(Debug)]
pub(super) struct Record<T> {
    pub value: T,
    /// Every key of the table, known or not, with its position.
    pub keys: Vec<Spanned<String>>,
    pub unknown: Vec<Spanned<String>>,
}

impl<T> Record<T> {
    pub fn key_span(&self, name: &str) -> Option<std::ops::Range<usize>> {
        self.keys
            .iter()
            .find(|k| k.get_ref() == name)
            .map(Spanned::span)
    }
}

/// A table of free-form keys, in file order.
pub(super) type Entries = Vec<(Spanned<String>, Spanned<Value>)>;

/// toml hands a datetime over as a one-entry table whose key, alone among keys, has no
/// position: that entry's value is the datetime as text.
fn is_datetime(key: &Spanned<String>) -> bool {
    key.span().is_empty()
}

/// The struct name and fields that `T`'s derived `Deserialize` asks a deserializer for: the
/// known keys of a raw table, and how `Spanned` is recognised.
fn struct_shape<'de, T: Deserialize<'de>>() -> (&'static str, &'static [&'static str]) {
    struct Capture<'a>(&'a mut (&'static str, &'static [&'static str]));
    impl<'de> Deserializer<'de> for Capture<'_> {
        type Error = de::value::Error;
        fn deserialize_any<V: Visitor<'de>>(self, _: V) -> Result<V::Value, Self::Error> {
            Err(de::Error::custom("not a struct"))
        }
        fn deserialize_struct<V: Visitor<'de>>(
            self,
            name: &'static str,
            fields: &'static [&'static str],
            _: V,
        ) -> Result<V::Value, Self::Error> {
            *self.0 = (name, fields);
            Err(de::Error::custom("captured"))
        }
        serde::forward_to_deserialize_any! {
            bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf
            option unit unit_struct newtype_struct seq tuple tuple_struct map enum identifier
            ignored_any
        }
    }
    let mut shape: (&'static str, &'static [&'static str]) = ("", &[]);
    let _ = T::deserialize(Capture(&mut shape));
    shape
}

/// The known keys of the raw table `T`, in declaration order.
pub(super) fn fields_of<'de, T: Deserialize<'de>>() -> &'static [&'static str] {
    struct_shape::<T>().1
}

/// A key with its position. The one key of a datetime has no position (and, alone, no
/// `Spanned` form), so the key is asked for as `Spanned` the way `Spanned` itself asks, and a bare
/// string is accepted too, with an empty span at 0.
struct Key(Spanned<String>);

impl<'de> Deserialize<'de> for Key {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct KeyVisitor;
        impl<'de> Visitor<'de> for KeyVisitor {
            type Value = Key;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a table key")
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Key, A::Error> {
                Spanned::<String>::deserialize(MapAccessDeserializer::new(map)).map(Key)
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<Key, E> {
                Ok(Key(Spanned::new(0..0, s.to_owned())))
            }
        }
        let (name, fields) = struct_shape::<Spanned<String>>();
        d.deserialize_struct(name, fields, KeyVisitor)
    }
}

/// What a table or an array is read as; anything else is what was [`Shaped::Found`] instead.
pub(super) trait Shape<'de>: Sized {
    fn from_map<A: MapAccess<'de>>(mut map: A) -> Result<Shaped<Self>, A::Error> {
        Ok(Shaped::Found(drain_map(&mut map)?))
    }
    fn from_seq<A: SeqAccess<'de>>(mut seq: A) -> Result<Shaped<Self>, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(Shaped::Found(Value::Array))
    }
}

/// Reads past a table, or a datetime (told apart by its key without a position).
fn drain_map<'de, A: MapAccess<'de>>(map: &mut A) -> Result<Value, A::Error> {
    let mut found = Value::Table;
    while let Some(Key(key)) = map.next_key::<Key>()? {
        if is_datetime(&key) {
            found = Value::Datetime(map.next_value::<String>()?);
        } else {
            map.next_value::<IgnoredAny>()?;
        }
    }
    Ok(found)
}

impl<'de, T: Deserialize<'de>> Shape<'de> for Vec<Spanned<T>> {
    fn from_seq<A: SeqAccess<'de>>(mut seq: A) -> Result<Shaped<Self>, A::Error> {
        let mut out = Vec::new();
        while let Some(item) = seq.next_element::<Spanned<T>>()? {
            out.push(item);
        }
        Ok(Shaped::Read(out))
    }
}

impl<'de> Shape<'de> for Entries {
    fn from_map<A: MapAccess<'de>>(mut map: A) -> Result<Shaped<Self>, A::Error> {
        let mut out = Entries::new();
        while let Some(Key(key)) = map.next_key::<Key>()? {
            if is_datetime(&key) {
                return Ok(Shaped::Found(Value::Datetime(map.next_value()?)));
            }
            out.push((key, map.next_value()?));
        }
        // Tables come ordered by key; messages follow the file.
        out.sort_by_key(|(k, _)| k.span().start);
        Ok(Shaped::Read(out))
    }
}

impl<'de, T: Deserialize<'de>> Shape<'de> for Record<T> {
    fn from_map<A: MapAccess<'de>>(map: A) -> Result<Shaped<Self>, A::Error> {
        let mut keys = Vec::new();
        let mut unknown = Vec::new();
        let mut datetime = None;
        let filter = KnownKeys {
            map,
            known: fields_of::<T>(),
            keys: &mut keys,
            unknown: &mut unknown,
            datetime: &mut datetime,
        };
        let value = T::deserialize(MapAccessDeserializer::new(filter))?;
        if let Some(d) = datetime {
            return Ok(Shaped::Found(Value::Datetime(d)));
        }
        unknown.sort_by_key(|k| k.span().start);
        Ok(Shaped::Read(Record {
            value,
            keys,
            unknown,
        }))
    }
}

/// Passes a table's known keys on to the derived struct and keeps the others aside, so that an
/// unknown key is reported with its position instead of failing the whole file.
struct KnownKeys<'a, A> {
    map: A,
    known: &'static [&'static str],
    keys: &'a mut Vec<Spanned<String>>,
    unknown: &'a mut Vec<Spanned<String>>,
    datetime: &'a mut Option<String>,
}

impl<'de, A: MapAccess<'de>> MapAccess<'de> for KnownKeys<'_, A> {
    type Error = A::Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, A::Error> {
        while let Some(Key(key)) = self.map.next_key::<Key>()? {
            if is_datetime(&key) {
                *self.datetime = Some(self.map.next_value()?);
            } else if self.known.contains(&key.get_ref().as_str()) {
                let name = key.get_ref().clone();
                self.keys.push(key);
                return seed.deserialize(StringDeserializer::new(name)).map(Some);
            } else {
                self.map.next_value::<IgnoredAny>()?;
                self.keys.push(key.clone());
                self.unknown.push(key);
            }
        }
        Ok(None)
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, A::Error> {
        self.map.next_value_seed(seed)
    }
}

impl<'de, T: Shape<'de>> Deserialize<'de> for Shaped<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(ShapeVisitor(PhantomData))
    }
}

impl<'de> Deserialize<'de> for Value {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(ShapeVisitor::<Value>(PhantomData))
            .map(|shaped| match shaped {
                Shaped::Read(v) | Shaped::Found(v) => v,
            })
    }
}

/// A leaf reads a table or an array as just that.
impl<'de> Shape<'de> for Value {}

struct ShapeVisitor<T>(PhantomData<T>);

impl<'de, T: Shape<'de>> Visitor<'de> for ShapeVisitor<T> {
    type Value = Shaped<T>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any TOML value")
    }
    fn visit_bool<E>(self, b: bool) -> Result<Self::Value, E> {
        Ok(Shaped::Found(Value::Boolean(b)))
    }
    fn visit_i64<E>(self, i: i64) -> Result<Self::Value, E> {
        Ok(Shaped::Found(Value::Integer(i.into())))
    }
    fn visit_i128<E>(self, i: i128) -> Result<Self::Value, E> {
        Ok(Shaped::Found(Value::Integer(i)))
    }
    fn visit_u64<E>(self, i: u64) -> Result<Self::Value, E> {
        Ok(Shaped::Found(Value::Integer(i.into())))
    }
    fn visit_u128<E>(self, i: u128) -> Result<Self::Value, E> {
        // Far out of every key's range either way; messages show the number as written.
        let i = i128::try_from(i).unwrap_or(i128::MAX);
        Ok(Shaped::Found(Value::Integer(i)))
    }
    fn visit_f64<E>(self, x: f64) -> Result<Self::Value, E> {
        Ok(Shaped::Found(Value::Float(x)))
    }
    fn visit_str<E>(self, s: &str) -> Result<Self::Value, E> {
        Ok(Shaped::Found(Value::String(s.to_owned())))
    }
    fn visit_string<E>(self, s: String) -> Result<Self::Value, E> {
        Ok(Shaped::Found(Value::String(s)))
    }
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
        T::from_map(map)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
        T::from_seq(seq)
    }
}
