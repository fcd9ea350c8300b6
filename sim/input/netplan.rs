use crate::diag::{Diagnostic, InputError, TextOrigin};
use crate::model::{DeviceId, Network};
pub fn apply_netplan(net: &mut Network, dev: DeviceId, text: &str, origin: &TextOrigin) -> Result<Vec<Diagnostic>, InputError> {
    let _ = (net, dev, text, origin);
    Ok(vec![])
}
