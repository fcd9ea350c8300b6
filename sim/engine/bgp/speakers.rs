//! Every device's BGP speaker, found by device id. The ids are dense (a device's index in the
//! network), so the speakers are a vector slot per device: every UPDATE received, every
//! decision and every export looks its speaker up, and as a B-tree those searches were a
//! fiftieth of an eBGP fabric's run. Walked in device order, as the B-tree was.

use super::table::Speaker;
use crate::model::DeviceId;

#[derive(Clone, Debug, Default)]
pub(crate) struct Speakers(Vec<Option<Speaker>>);

impl Speakers {
    pub(crate) fn get(&self, dev: &DeviceId) -> Option<&Speaker> {
        self.0.get(dev.idx())?.as_ref()
    }

    pub(crate) fn get_mut(&mut self, dev: &DeviceId) -> Option<&mut Speaker> {
        self.0.get_mut(dev.idx())?.as_mut()
    }

    pub(crate) fn contains_key(&self, dev: &DeviceId) -> bool {
        self.get(dev).is_some()
    }

    /// The device's speaker, started with `new` if it runs none.
    pub(crate) fn get_or_insert_with(&mut self, dev: DeviceId, new: impl FnOnce() -> Speaker) -> &mut Speaker {
        if self.0.len() <= dev.idx() {
            self.0.resize_with(dev.idx() + 1, || None);
        }
        self.0[dev.idx()].get_or_insert_with(new)
    }

    pub(crate) fn remove(&mut self, dev: &DeviceId) -> Option<Speaker> {
        self.0.get_mut(dev.idx())?.take()
    }

    /// The devices that run a speaker, in device order.
    pub(crate) fn keys(&self) -> impl Iterator<Item = DeviceId> + '_ {
        self.values().map(|sp| sp.device)
    }

    pub(crate) fn values(&self) -> impl Iterator<Item = &Speaker> {
        self.0.iter().flatten()
    }

    #[cfg(test)]
    pub(crate) fn values_mut(&mut self) -> impl Iterator<Item = &mut Speaker> {
        self.0.iter_mut().flatten()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::BgpFlavor;

    #[test]
    fn speakers_are_found_by_device_and_walked_in_device_order() {
        let mut sps = Speakers::default();
        let (a, b) = (DeviceId(5), DeviceId(2));
        for d in [a, b] {
            sps.get_or_insert_with(d, || {
                Speaker::new(d, BgpFlavor::Bird, 65000, "10.0.0.1".parse().unwrap())
            });
        }
        // Started once: a second call finds the speaker there.
        sps.get_or_insert_with(a, || unreachable!()).asn = 65001;
        assert_eq!(sps.keys().collect::<Vec<_>>(), [b, a]);
        assert_eq!(sps.get(&a).map(|sp| sp.asn), Some(65001));
        assert!(sps.get(&DeviceId(9)).is_none() && !sps.contains_key(&DeviceId(3)));
        assert_eq!(sps.remove(&b).map(|sp| sp.device), Some(b));
        assert_eq!(sps.keys().collect::<Vec<_>>(), [a]);
    }
}
