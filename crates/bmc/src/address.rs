//! BMC addresses: the one splitter of `HOST[:PORT]` (IPMI LAN and Redfish alike) and the
//! form an address may be shown in.

use crate::BmcError;

fn config(msg: impl Into<String>) -> BmcError {
    BmcError::Config(msg.into())
}

/// Splits `HOST[:PORT]` or `[V6]:PORT`; the host must not be empty.
pub fn split_host_port(hostport: &str) -> Result<(String, Option<u16>), BmcError> {
    let port = |p: &str| {
        p.parse::<u16>()
            .map_err(|_| config(format!("port {p:?} is not a number")))
    };
    if hostport.is_empty() {
        return Err(config("no host"));
    }
    if let Some(rest) = hostport.strip_prefix('[') {
        let (h, after) = rest
            .split_once(']')
            .ok_or_else(|| config("an IPv6 address needs its closing ]"))?;
        return match after.strip_prefix(':') {
            Some(p) => Ok((h.to_string(), Some(port(p)?))),
            None if after.is_empty() => Ok((h.to_string(), None)),
            None => Err(config("text after the address")),
        };
    }
    match hostport.rsplit_once(':') {
        Some(("", _)) => Err(config("no host")),
        Some((h, p)) => Ok((h.to_string(), Some(port(p)?))),
        None => Ok((hostport.to_string(), None)),
    }
}

/// The address as it may be shown: a password in it (`USER:PASSWORD@`) as `***`.
pub fn shown(address: &str) -> String {
    let Some((scheme, rest)) = address.split_once("://") else {
        return address.to_string();
    };
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let (authority, path) = rest.split_at(end);
    match authority.rsplit_once('@') {
        Some((userinfo, host)) if userinfo.contains(':') => {
            let user = userinfo.split(':').next().unwrap_or("");
            format!("{scheme}://{user}:***@{host}{path}")
        }
        _ => address.to_string(),
    }
}
