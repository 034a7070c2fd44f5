//! [`ServiceInstance`] and its JSON, exactly as Curator 5.4's `JsonInstanceSerializer` writes
//! and reads it.

use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// How an instance's node is made (Curator's `ServiceType`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum ServiceType {
    /// An EPHEMERAL node, gone with the registering session (re-registered on the next).
    #[default]
    Dynamic,
    /// A PERSISTENT node (meant for Curator's discovery server to clean up).
    Static,
    /// A PERSISTENT node that stays until unregistered.
    Permanent,
    /// An EPHEMERAL_SEQUENTIAL node named `<id><sequence>`.
    DynamicSequential,
}

impl ServiceType {
    /// Whether the node goes with its session.
    pub fn is_dynamic(self) -> bool {
        matches!(self, ServiceType::Dynamic | ServiceType::DynamicSequential)
    }
}

/// One part of a [`UriSpec`]: literal text or a `{variable}`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct UriPart {
    /// The text, or the variable's name.
    #[serde(default)]
    pub value: String,
    /// Whether this is a variable.
    #[serde(default)]
    pub variable: bool,
}

/// A URI template (Curator's `UriSpec`), such as `{scheme}://{address}:{port}`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
pub struct UriSpec {
    /// The parts, in order.
    #[serde(default)]
    pub parts: Vec<UriPart>,
}

impl UriSpec {
    /// Parses a template: text in braces is a variable, the rest literal (an unclosed brace
    /// is literal text).
    pub fn new(template: &str) -> UriSpec {
        let mut parts = Vec::new();
        let mut rest = template;
        while !rest.is_empty() {
            match rest.find('{') {
                Some(open) => {
                    let after = &rest[open + 1..];
                    match after.find('}') {
                        Some(close) => {
                            if open > 0 {
                                parts.push(literal(&rest[..open]));
                            }
                            parts.push(UriPart {
                                value: after[..close].to_owned(),
                                variable: true,
                            });
                            rest = &after[close + 1..];
                        }
                        None => {
                            parts.push(literal(rest));
                            break;
                        }
                    }
                }
                None => {
                    parts.push(literal(rest));
                    break;
                }
            }
        }
        UriSpec { parts }
    }

    /// Fills the template with `instance`'s fields (`scheme` is `https` when it has an SSL
    /// port, else `http`; `name`, `id`, `address`, `port`, `ssl-port`,
    /// `registration-time-utc`, `service-type`). Unknown variables stay as `{name}`.
    pub fn build(&self, instance: &ServiceInstance) -> String {
        let mut out = String::new();
        for part in &self.parts {
            if !part.variable {
                out.push_str(&part.value);
                continue;
            }
            let value = match part.value.as_str() {
                "scheme" => Some(
                    if instance.ssl_port.is_some() {
                        "https"
                    } else {
                        "http"
                    }
                    .to_owned(),
                ),
                "name" => Some(instance.name.clone()),
                "id" => Some(instance.id.clone()),
                "address" => instance.address.clone(),
                "port" => instance.port.map(|p| p.to_string()),
                "ssl-port" => instance.ssl_port.map(|p| p.to_string()),
                "registration-time-utc" => Some(instance.registration_time_utc.to_string()),
                "service-type" => serde_json::to_value(instance.service_type)
                    .ok()
                    .and_then(|v| v.as_str().map(str::to_owned)),
                _ => None,
            };
            match value {
                Some(v) => out.push_str(&v),
                None => {
                    out.push('{');
                    out.push_str(&part.value);
                    out.push('}');
                }
            }
        }
        out
    }
}

fn literal(text: &str) -> UriPart {
    UriPart {
        value: text.to_owned(),
        variable: false,
    }
}

/// A service instance as curator-x-discovery stores it: the JSON of Curator 5.4's default
/// `JsonInstanceSerializer`, fields in Curator's order, `null` written for absent values,
/// unknown fields ignored on read, missing fields read as Curator reads them (name and id
/// `""`, numbers and objects absent, time 0, [`ServiceType::Dynamic`]).
///
/// `enabled` is written only when set: Curator's default serializer writes the older layout
/// without it (and reads a missing `enabled` as true).
///
/// **Payload.** Curator types the payload for Jackson (`@JsonTypeInfo(use = CLASS)`): an
/// object carries `"@class":"<Java class>"` first, a list or a long is wrapped as
/// `["<class>", value]`, and strings, ints, booleans and doubles are bare. The payload is kept
/// here as that JSON; [`set_payload`](Self::set_payload) writes it for a Java class and
/// [`payload_value`](Self::payload_value) / [`payload_class`](Self::payload_class) read it.
///
/// ```
/// use zk_recipes::discovery::{ServiceInstance, UriSpec};
/// let mut web = ServiceInstance::new("web", "10.0.0.5", 8080);
/// web.uri_spec = Some(UriSpec::new("{scheme}://{address}:{port}"));
/// web.set_payload(Some("java.util.LinkedHashMap"), &serde_json::json!({"zone": "eu-1"})).unwrap();
/// let json = web.to_json();
/// assert!(json.starts_with(r#"{"name":"web","id":""#));
/// let back = ServiceInstance::from_json(json.as_bytes()).unwrap();
/// assert_eq!(back, web);
/// assert_eq!(back.payload_value().unwrap()["zone"], "eu-1");
/// assert_eq!(web.uri_spec.as_ref().unwrap().build(&web), "http://10.0.0.5:8080");
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ServiceInstance {
    /// The service's name (the node's parent).
    #[serde(default)]
    pub name: String,
    /// The instance's id (the node's name; unique within the service).
    #[serde(default)]
    pub id: String,
    /// Host or address.
    #[serde(default)]
    pub address: Option<String>,
    /// Plain port.
    #[serde(default)]
    pub port: Option<i32>,
    /// TLS port.
    #[serde(default)]
    pub ssl_port: Option<i32>,
    /// The typed payload JSON (see the type's docs).
    #[serde(default)]
    pub payload: Option<Value>,
    /// Registration time, milliseconds since the Unix epoch.
    #[serde(rename = "registrationTimeUTC", default)]
    pub registration_time_utc: i64,
    /// How the node is made.
    #[serde(default)]
    pub service_type: ServiceType,
    /// URI template.
    #[serde(default)]
    pub uri_spec: Option<UriSpec>,
    /// Whether the instance takes traffic; written only when set (`None` reads as enabled).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enabled: Option<bool>,
}

impl ServiceInstance {
    /// A DYNAMIC instance of `name` at `address:port`, with a random UUID id and the current
    /// time, as Curator's builder makes it.
    pub fn new(name: &str, address: &str, port: i32) -> ServiceInstance {
        ServiceInstance {
            name: name.to_owned(),
            id: uuid::Uuid::new_v4().hyphenated().to_string(),
            address: Some(address.to_owned()),
            port: Some(port),
            ssl_port: None,
            payload: None,
            registration_time_utc: now_millis(),
            service_type: ServiceType::Dynamic,
            uri_spec: None,
            enabled: None,
        }
    }

    /// Whether the instance takes traffic (`enabled` absent or true).
    pub fn is_enabled(&self) -> bool {
        self.enabled.unwrap_or(true)
    }

    /// The instance's JSON, as Curator writes it.
    pub fn to_json(&self) -> String {
        // Serialising plain data (strings, numbers, JSON values) cannot fail.
        serde_json::to_string(self).unwrap_or_default()
    }

    /// Reads an instance from JSON (Curator's or ours).
    ///
    /// # Errors
    ///
    /// The JSON error for bytes that are not such an object.
    pub fn from_json(bytes: &[u8]) -> Result<ServiceInstance, serde_json::Error> {
        serde_json::from_slice(bytes)
    }

    /// Sets the payload as Jackson types it for the Java class `class` (`None`: untyped,
    /// which Curator reads back as a plain map, list or scalar): an object gets `@class`
    /// first, anything but a string, a bool or a finite number is wrapped as `[class, value]`.
    ///
    /// # Errors
    ///
    /// The JSON error if `value` does not serialise.
    pub fn set_payload<T: Serialize>(
        &mut self,
        class: Option<&str>,
        value: &T,
    ) -> Result<(), serde_json::Error> {
        let value = serde_json::to_value(value)?;
        self.payload = Some(match (class, value) {
            (None, v) => v,
            (Some(class), Value::Object(fields)) => {
                let mut typed = serde_json::Map::new();
                typed.insert("@class".to_owned(), Value::String(class.to_owned()));
                typed.extend(fields.into_iter().filter(|(k, _)| k != "@class"));
                Value::Object(typed)
            }
            (Some(_), v @ (Value::String(_) | Value::Bool(_))) => v,
            (Some(class), Value::Number(n)) if !bare_number(class, &n) => {
                Value::Array(vec![Value::String(class.to_owned()), Value::Number(n)])
            }
            (Some(_), v @ Value::Number(_)) => v,
            (Some(class), v) => Value::Array(vec![Value::String(class.to_owned()), v]),
        });
        Ok(())
    }

    /// The payload's Java class, if typed.
    pub fn payload_class(&self) -> Option<&str> {
        match self.payload.as_ref()? {
            Value::Object(fields) => fields.get("@class")?.as_str(),
            Value::Array(items) if items.len() == 2 => items.first()?.as_str(),
            _ => None,
        }
    }

    /// The payload without its type information (`@class` removed, `[class, value]`
    /// unwrapped).
    pub fn payload_value(&self) -> Option<Value> {
        let payload = self.payload.as_ref()?;
        Some(match payload {
            Value::Object(fields) => Value::Object(
                fields
                    .iter()
                    .filter(|(k, _)| *k != "@class")
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect(),
            ),
            Value::Array(items) if self.payload_class().is_some() => items.get(1)?.clone(),
            v => v.clone(),
        })
    }

    /// The payload read as `T` (after [`payload_value`](Self::payload_value)).
    ///
    /// # Errors
    ///
    /// The JSON error if it does not read as `T`.
    pub fn payload_as<T: serde::de::DeserializeOwned>(
        &self,
    ) -> Result<Option<T>, serde_json::Error> {
        self.payload_value().map(serde_json::from_value).transpose()
    }
}

/// Whether Jackson writes a number of Java class `class` bare (Integer and finite Double
/// are "natural" JSON types; Long and the others are wrapped).
fn bare_number(class: &str, n: &serde_json::Number) -> bool {
    match class {
        "java.lang.Integer" => n.as_i64().is_some_and(|v| i32::try_from(v).is_ok()),
        "java.lang.Double" => n.is_f64(),
        _ => false,
    }
}

fn now_millis() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_curators_default_layout_byte_for_byte() {
        let instance = ServiceInstance {
            name: "web".into(),
            id: "0f8fad5b-d9cb-469f-a165-70867728950e".into(),
            address: Some("10.0.0.5".into()),
            port: Some(8080),
            ssl_port: None,
            payload: None,
            registration_time_utc: 1_700_000_000_000,
            service_type: ServiceType::Dynamic,
            uri_spec: None,
            enabled: None,
        };
        assert_eq!(
            instance.to_json(),
            r#"{"name":"web","id":"0f8fad5b-d9cb-469f-a165-70867728950e","address":"10.0.0.5","port":8080,"sslPort":null,"payload":null,"registrationTimeUTC":1700000000000,"serviceType":"DYNAMIC","uriSpec":null}"#
        );
    }

    #[test]
    fn reads_missing_and_unknown_fields_as_curator() {
        let i = ServiceInstance::from_json(br#"{"future":1,"port":null}"#).unwrap();
        assert_eq!(i.name, "");
        assert_eq!(i.id, "");
        assert_eq!(i.port, None);
        assert_eq!(i.registration_time_utc, 0);
        assert_eq!(i.service_type, ServiceType::Dynamic);
        assert!(i.is_enabled());
        let i =
            ServiceInstance::from_json(br#"{"enabled":false,"serviceType":"DYNAMIC_SEQUENTIAL"}"#)
                .unwrap();
        assert!(!i.is_enabled());
        assert_eq!(i.service_type, ServiceType::DynamicSequential);
        assert!(ServiceInstance::from_json(b"[1]").is_err());
        assert!(ServiceInstance::from_json(br#"{"serviceType":"ODD"}"#).is_err());
    }

    #[test]
    fn payloads_are_typed_as_jackson_types_them() {
        let mut i = ServiceInstance::new("s", "h", 1);
        i.set_payload(Some("com.example.Details"), &serde_json::json!({"a": 1}))
            .unwrap();
        assert_eq!(
            serde_json::to_string(&i.payload).unwrap(),
            r#"{"@class":"com.example.Details","a":1}"#
        );
        assert_eq!(i.payload_class(), Some("com.example.Details"));
        assert_eq!(i.payload_value().unwrap(), serde_json::json!({"a": 1}));
        i.set_payload(Some("java.lang.Long"), &5i64).unwrap();
        assert_eq!(
            serde_json::to_string(&i.payload).unwrap(),
            r#"["java.lang.Long",5]"#
        );
        assert_eq!(i.payload_as::<i64>().unwrap(), Some(5));
        i.set_payload(Some("java.lang.Integer"), &5i32).unwrap();
        assert_eq!(serde_json::to_string(&i.payload).unwrap(), "5");
        i.set_payload(Some("java.lang.String"), &"x").unwrap();
        assert_eq!(serde_json::to_string(&i.payload).unwrap(), r#""x""#);
        i.set_payload(Some("java.util.ArrayList"), &vec![1, 2])
            .unwrap();
        assert_eq!(
            serde_json::to_string(&i.payload).unwrap(),
            r#"["java.util.ArrayList",[1,2]]"#
        );
        assert_eq!(i.payload_as::<Vec<i32>>().unwrap(), Some(vec![1, 2]));
    }

    #[test]
    fn uri_specs_parse_and_build_like_curators() {
        let spec = UriSpec::new("{scheme}://{address}:{port}/x/{other}");
        let text: Vec<_> = spec
            .parts
            .iter()
            .map(|p| (p.value.as_str(), p.variable))
            .collect();
        assert_eq!(
            text,
            [
                ("scheme", true),
                ("://", false),
                ("address", true),
                (":", false),
                ("port", true),
                ("/x/", false),
                ("other", true)
            ]
        );
        let mut i = ServiceInstance::new("s", "h", 80);
        assert_eq!(spec.build(&i), "http://h:80/x/{other}");
        i.ssl_port = Some(443);
        assert_eq!(spec.build(&i), "https://h:80/x/{other}");
        assert_eq!(
            serde_json::to_string(&UriSpec::new("{a}:")).unwrap(),
            r#"{"parts":[{"value":"a","variable":true},{"value":":","variable":false}]}"#
        );
    }
}
