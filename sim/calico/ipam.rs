//! Calico IPAM: which block a node claims and which address each handle gets inside a block.
//!
//! Follows `../shared/reference/calico-ipam.md`, which reads libcalico-go v3.25:
//! * block choice — `determineSeed`, `randomBlockGenerator` and `findUsableBlock`
//!   (`libcalico-go/lib/ipam/ipam_block_reader_writer.go`): FNV-1 32-bit of the node name seeds
//!   Go's `math/rand` ([`super::gorand`]), `big.Int.Rand(numBlocks)` gives the start index, and
//!   the walk goes upward with wrap-around, skipping blocks that already exist;
//! * the order of `autoAssign` (`libcalico-go/lib/ipam/ipam.go`): the node's affine blocks
//!   first, then a new block up to `maxBlocksPerHost`, then borrowing unless strict affinity;
//! * addresses inside a block (`libcalico-go/lib/ipam/ipam_block.go`): the `Unallocated` list
//!   starts as every ordinal in order, assignment takes from its front and release appends to
//!   its end, so a released address comes back only after every never-used one.
//!
//! Blocks are identified by their index in the pool (u128 arithmetic serves IPv4 and IPv6).

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use ipnet::IpNet;

use super::datastore::{EncapMode, IpPool, Node};
use super::gorand::Rand;

/// `maxBlocksPerHost` when `IPAMConfig` leaves it unset (0): `autoAssign` uses 20.
pub const DEFAULT_MAX_BLOCKS_PER_HOST: u32 = 20;

/// Errors with the text Calico gives (validator reasons from calico-reference.md §3.1, IPAM
/// messages from calico-ipam.md §5 and §8).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum IpamError {
    #[error("IPPool {0}: IPPool CIDR is not strictly masked")]
    NotStrictlyMasked(IpNet),
    #[error("IPPool {cidr}: {family} block size must be between {min} and {max}")]
    BlockSizeRange {
        cidr: IpNet,
        family: &'static str,
        min: u8,
        max: u8,
    },
    #[error(
        "IPPool {cidr}: IP pool size is too small for use with Calico IPAM. It must be equal to or greater than the block size."
    )]
    PoolSmallerThanBlock { cidr: IpNet },
    /// Not a Calico message: a CRD-applied pool whose block would be larger than IPv6's whole
    /// address space cannot exist in fabsim's arithmetic.
    #[error("IPPool {cidr}: block size {block_size} is not a usable block for this address family")]
    UnusableBlockSize { cidr: IpNet, block_size: u8 },
    /// `determinePools` found no pool for the node.
    #[error("no configured Calico pools for node {node}")]
    NoPools { node: String },
    /// `findUsableBlock`'s `noFreeBlocksError`: every block of every pool exists already.
    #[error("No Free Blocks")]
    NoFreeBlocks,
    /// `ErrBlockLimit`: the node's affine blocks are full and it has `maxBlocksPerHost` of them.
    #[error("cannot allocate new block due to per host block limit")]
    BlockLimit { limit: u32 },
    /// No free affine block, no new block, and `StrictAffinity` forbids borrowing.
    #[error("No more free affine blocks and strict affinity enabled")]
    StrictAffinity,
    /// Borrowing found no free address either. Go prints the slice with `%v`: `[a b]`.
    #[error("No IPs available in pools: [{}]", .pools.iter().map(|p| p.to_string()).collect::<Vec<_>>().join(" "))]
    PoolsExhausted { pools: Vec<IpNet> },
    /// Not a Calico message (Calico's release returns unallocated addresses silently).
    #[error("{0} is not allocated")]
    NotAllocated(IpAddr),
    /// Not a Calico message: an observed address (a snapshot's dump) already held by another
    /// handle, or in a block too large to list its free addresses.
    #[error("{addr} cannot be taken for {handle}: {why}")]
    CannotTake {
        addr: IpAddr,
        handle: String,
        why: &'static str,
    },
}

/// An IP pool as IPAM sees it: the CIDR and the block size. The fields are private so that a
/// `Pool` always satisfies the geometry the arithmetic relies on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Pool {
    cidr: IpNet,
    block_size: u8,
}

impl Pool {
    /// A pool as calicoctl / the v3 API accept it (`validateIPPoolSpec` and clientv3's checks):
    /// strictly masked CIDR, block size 20–32 (IPv4) or 116–128 (IPv6), pool not smaller than
    /// a block.
    pub fn new(cidr: IpNet, block_size: u8) -> Result<Pool, IpamError> {
        let (family, min, max) = match cidr {
            IpNet::V4(_) => ("IPv4", 20, 32),
            IpNet::V6(_) => ("IPv6", 116, 128),
        };
        if cidr.addr() != cidr.network() {
            return Err(IpamError::NotStrictlyMasked(cidr));
        }
        if !(min..=max).contains(&block_size) {
            return Err(IpamError::BlockSizeRange { cidr, family, min, max });
        }
        Pool::unvalidated(cidr, block_size)
    }

    /// A pool applied as a `crd.projectcalico.org/v1` object with kubectl, which skips the v3
    /// validation (calico-reference.md §3.2): only what IPAM's arithmetic needs is checked. The
    /// CIDR is truncated to its network, as IPAM only ever uses the network.
    pub fn unvalidated(cidr: IpNet, block_size: u8) -> Result<Pool, IpamError> {
        if block_size < cidr.prefix_len() {
            return Err(IpamError::PoolSmallerThanBlock { cidr });
        }
        // A block must have between 1 and 2^127 addresses so its size fits a u128.
        if block_size > cidr.max_prefix_len() || (cidr.max_prefix_len() == 128 && block_size == 0) {
            return Err(IpamError::UnusableBlockSize { cidr, block_size });
        }
        Ok(Pool {
            cidr: cidr.trunc(),
            block_size,
        })
    }

    pub fn cidr(&self) -> IpNet {
        self.cidr
    }

    pub fn block_size(&self) -> u8 {
        self.block_size
    }

    /// log2 of the number of blocks: numBlocks = 2^(blockSize − pool prefix), up to 2^128.
    pub fn blocks_log2(&self) -> u32 {
        u32::from(self.block_size - self.cidr.prefix_len())
    }

    /// The largest block index (numBlocks − 1), as a mask for wrapping the walk.
    fn index_mask(&self) -> u128 {
        low_bits(self.blocks_log2())
    }

    /// Address bits inside one block.
    fn host_bits(&self) -> u32 {
        u32::from(self.cidr.max_prefix_len() - self.block_size)
    }

    /// Block `index` = pool network + index · 2^(address bits − blockSize) (calico-ipam.md §4).
    pub fn block(&self, index: u128) -> IpNet {
        let offset = index.checked_shl(self.host_bits()).unwrap_or(0);
        net(self.is_v4(), addr_bits(self.cidr.network()) + offset, self.block_size)
    }

    /// The index of `block` in this pool, if it is one of the pool's blocks.
    pub fn block_index(&self, block: IpNet) -> Option<u128> {
        if block.prefix_len() != self.block_size || !self.cidr.contains(&block) || block.addr() != block.network() {
            return None;
        }
        let offset = addr_bits(block.network()) - addr_bits(self.cidr.network());
        Some(offset.checked_shr(self.host_bits()).unwrap_or(0))
    }

    fn is_v4(&self) -> bool {
        matches!(self.cidr, IpNet::V4(_))
    }
}

/// FNV-1 32-bit (`hash/fnv.New32`: multiply by the prime, then xor the byte; NOT `New32a`,
/// which does it the other way round and does not reproduce the lab).
pub fn fnv1_32(bytes: &[u8]) -> u32 {
    let mut h: u32 = 2_166_136_261;
    for &b in bytes {
        h = h.wrapping_mul(16_777_619);
        h ^= u32::from(b);
    }
    h
}

/// `determineSeed`: the FNV-1 hash of the node name, as a non-negative int64.
///
/// Deviation: for host-mask blocks (/32, /128) Calico seeds from the wall clock, so its choice
/// is not reproducible (any free block is "correct"); fabsim keeps the name-derived seed there
/// too so that runs stay deterministic.
pub fn determine_seed(node: &str) -> i64 {
    i64::from(fnv1_32(node.as_bytes()))
}

/// The index at which `node`'s walk over `pool` starts (`randomBlockGenerator`): a fresh
/// `rand.New(rand.NewSource(seed))`, then `big.Int.Rand(numBlocks)`. Independent of the pool's
/// base address.
pub fn start_index(node: &str, pool: &Pool) -> u128 {
    let k = pool.blocks_log2() as usize;
    // numBlocks = 2^k as little-endian 64-bit words (k ≤ 128 → at most three words).
    let mut limit = vec![0u64; k / 64 + 1];
    limit[k / 64] = 1 << (k % 64);
    let words = Rand::new(determine_seed(node)).big_int_rand(&limit);
    // The result is below 2^k ≤ 2^128, so it has at most two words.
    words
        .iter()
        .take(2)
        .enumerate()
        .fold(0u128, |acc, (i, &w)| acc | u128::from(w) << (64 * i))
}

/// The generator's order over a pool's block indices: start, start+1, …, last, 0, …, start−1
/// (each index exactly once).
pub fn walk(pool: &Pool, start: u128) -> impl Iterator<Item = u128> {
    let mask = pool.index_mask();
    let start = start & mask;
    let mut next = Some(start);
    std::iter::from_fn(move || {
        let cur = next?;
        let after = cur.wrapping_add(1) & mask;
        next = (after != start).then_some(after);
        Some(cur)
    })
}

/// The name Calico's Kubernetes datastore gives a BlockAffinity (`k-w1-10-66-207-64-26` in the
/// lab): the node, then the CIDR with `.`, `:` and `/` turned into `-`. Affinities are listed in
/// this name order.
pub fn affinity_name(node: &str, block: IpNet) -> String {
    let cidr: String = block
        .to_string()
        .chars()
        .map(|c| if matches!(c, '.' | ':' | '/') { '-' } else { c })
        .collect();
    format!("{node}-{cidr}")
}

/// One IPAM block: its affinity and its addresses.
///
/// Calico stores `Unallocated` as an explicit list; as nothing but assignment (from the front)
/// and release (to the back) touches it here, it is always "the never-used ordinals in order,
/// then the released ones in release order", which this keeps as a counter plus a queue.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Block {
    cidr: IpNet,
    affinity: Option<String>,
    /// Number of ordinals (addresses) in the block.
    size: u128,
    /// Ordinals `next_fresh..size` have never been handed out.
    next_fresh: u128,
    /// Released ordinals, in release order, after the fresh ones.
    released: VecDeque<u128>,
    /// Allocated ordinal → handle (e.g. `ipip-tunnel-addr-k-w1`, `k8s-pod-network.<id>`).
    allocations: BTreeMap<u128, String>,
}

impl Block {
    /// An empty block (`newBlock`) affine to `affinity` (None: an affinity-less block, e.g.
    /// after its pool was deleted).
    pub fn new(cidr: IpNet, affinity: Option<&str>) -> Block {
        let host_bits = u32::from(cidr.max_prefix_len() - cidr.prefix_len());
        Block {
            cidr: cidr.trunc(),
            affinity: affinity.map(str::to_owned),
            size: 1u128.checked_shl(host_bits).unwrap_or(u128::MAX),
            next_fresh: 0,
            released: VecDeque::new(),
            allocations: BTreeMap::new(),
        }
    }

    pub fn cidr(&self) -> IpNet {
        self.cidr
    }

    /// The node this block is affine to.
    pub fn affinity(&self) -> Option<&str> {
        self.affinity.as_deref()
    }

    /// Number of addresses in the block.
    pub fn size(&self) -> u128 {
        self.size
    }

    /// Number of free addresses (the length of `Unallocated`).
    pub fn free(&self) -> u128 {
        self.size - self.next_fresh + self.released.len() as u128
    }

    /// Hand out the first address of `Unallocated` to `handle`; None when the block is full.
    pub fn assign(&mut self, handle: &str) -> Option<IpAddr> {
        let ordinal = if self.next_fresh < self.size {
            self.next_fresh += 1;
            self.next_fresh - 1
        } else {
            self.released.pop_front()?
        };
        self.allocations.insert(ordinal, handle.to_owned());
        Some(self.address(ordinal))
    }

    /// The largest block whose `Unallocated` list `take`/`observed` spell out (a /16 of IPv4;
    /// Calico's blocks are /20–/32).
    const MAX_LISTED: u128 = 1 << 16;

    /// A block as an `IPAMBlock` dump shows it: allocated ordinals with their handles and
    /// `Unallocated` in its list order (kept whole: the next assignment takes its head).
    pub fn observed(
        cidr: IpNet,
        affinity: Option<&str>,
        allocations: impl IntoIterator<Item = (u128, String)>,
        unallocated: impl IntoIterator<Item = u128>,
    ) -> Block {
        let mut b = Block::new(cidr, affinity);
        b.next_fresh = b.size;
        b.released = unallocated.into_iter().filter(|o| *o < b.size).collect();
        b.allocations = allocations.into_iter().filter(|(o, _)| *o < b.size).collect();
        b
    }

    /// Mark `addr` allocated to `handle` whatever its place in `Unallocated`: an address a
    /// snapshot observed in use (a pod's IP, a tunnel address) whose allocation history is not
    /// in the dump. The free addresses keep their order; the taken one leaves the list.
    pub fn take(&mut self, addr: IpAddr, handle: &str) -> Result<(), IpamError> {
        let refuse = |why| IpamError::CannotTake {
            addr,
            handle: handle.to_owned(),
            why,
        };
        let ordinal = self.ordinal(addr).ok_or_else(|| refuse("not in the block"))?;
        match self.allocations.get(&ordinal) {
            Some(h) if h == handle => return Ok(()),
            Some(_) => return Err(refuse("another handle holds it")),
            None => {}
        }
        if ordinal >= self.next_fresh {
            if self.size > Self::MAX_LISTED {
                return Err(refuse("the block is too large"));
            }
            // Spell the fresh ordinals out so one from the middle can leave the list.
            let fresh: VecDeque<u128> = (self.next_fresh..self.size).collect();
            let released = std::mem::replace(&mut self.released, fresh);
            self.released.extend(released);
            self.next_fresh = self.size;
        }
        self.released.retain(|o| *o != ordinal);
        self.allocations.insert(ordinal, handle.to_owned());
        Ok(())
    }

    /// Release `addr`: its ordinal goes to the END of `Unallocated`. Returns the handle it had.
    pub fn release(&mut self, addr: IpAddr) -> Result<String, IpamError> {
        let ordinal = self.ordinal(addr).ok_or(IpamError::NotAllocated(addr))?;
        let handle = self.allocations.remove(&ordinal).ok_or(IpamError::NotAllocated(addr))?;
        self.released.push_back(ordinal);
        Ok(handle)
    }

    /// Allocated addresses with their handles, in address order.
    pub fn allocations(&self) -> impl Iterator<Item = (IpAddr, &str)> + '_ {
        self.allocations.iter().map(|(&o, h)| (self.address(o), h.as_str()))
    }

    /// The handle holding `addr`, if allocated.
    pub fn handle_of(&self, addr: IpAddr) -> Option<&str> {
        self.ordinal(addr)
            .and_then(|o| self.allocations.get(&o))
            .map(String::as_str)
    }

    /// `Unallocated` in list order (the next addresses `assign` would hand out).
    pub fn unallocated(&self) -> impl Iterator<Item = IpAddr> + '_ {
        (self.next_fresh..self.size)
            .chain(self.released.iter().copied())
            .map(|o| self.address(o))
    }

    fn address(&self, ordinal: u128) -> IpAddr {
        let is_v4 = matches!(self.cidr, IpNet::V4(_));
        to_addr(is_v4, addr_bits(self.cidr.network()) + ordinal)
    }

    fn ordinal(&self, addr: IpAddr) -> Option<u128> {
        self.cidr
            .contains(&addr)
            .then(|| addr_bits(addr) - addr_bits(self.cidr.network()))
    }
}

/// The IPAM state of a datastore: every block (keyed by CIDR, as Calico keys IPAMBlocks), the
/// BlockAffinities, and the pools new requests may use. `pools` are the enabled pools in
/// Calico's order (`GetEnabledPools`: by pool name, filtered by node selector and allowed use —
/// the caller's job); a whole pool is walked before the next. Pools can change (a pool added,
/// disabled or deleted) without touching the blocks that exist.
#[derive(Clone, Debug)]
pub struct BlockAllocator {
    pools: Vec<Pool>,
    /// Every block by CIDR. A candidate block "exists" only if a block with exactly that CIDR
    /// does (`findUsableBlock` queries the block key), whatever the sizes of other blocks.
    blocks: BTreeMap<IpNet, Block>,
    /// BlockAffinity objects (node, block). Deleting one leaves the block and its addresses.
    affinities: BTreeSet<(String, IpNet)>,
    /// (node, block) in the order blocks were claimed.
    claims: Vec<(String, IpNet)>,
    max_blocks_per_host: u32,
    strict_affinity: bool,
}

impl BlockAllocator {
    /// No blocks yet; Calico's defaults (`maxBlocksPerHost` 20, `StrictAffinity` false).
    pub fn new(pools: Vec<Pool>) -> Self {
        BlockAllocator {
            pools,
            blocks: BTreeMap::new(),
            affinities: BTreeSet::new(),
            claims: Vec::new(),
            max_blocks_per_host: DEFAULT_MAX_BLOCKS_PER_HOST,
            strict_affinity: false,
        }
    }

    /// `IPAMConfig.maxBlocksPerHost` (0 means the default, 20).
    pub fn with_max_blocks_per_host(mut self, limit: u32) -> Self {
        self.max_blocks_per_host = if limit == 0 { DEFAULT_MAX_BLOCKS_PER_HOST } else { limit };
        self
    }

    /// `IPAMConfig.strictAffinity`: no borrowing from other nodes' blocks.
    pub fn with_strict_affinity(mut self, strict: bool) -> Self {
        self.strict_affinity = strict;
        self
    }

    pub fn pools(&self) -> &[Pool] {
        &self.pools
    }

    /// The enabled pools changed; existing blocks and affinities stay.
    pub fn set_pools(&mut self, pools: Vec<Pool>) {
        self.pools = pools;
    }

    /// (node, block) in claim order.
    pub fn claims(&self) -> &[(String, IpNet)] {
        &self.claims
    }

    /// Every block, in address order.
    pub fn blocks(&self) -> impl Iterator<Item = &Block> {
        self.blocks.values()
    }

    /// The block with this exact CIDR.
    pub fn block(&self, cidr: IpNet) -> Option<&Block> {
        self.blocks.get(&cidr)
    }

    /// BlockAffinities as (node, block), in node then address order.
    pub fn affinities(&self) -> impl Iterator<Item = &(String, IpNet)> {
        self.affinities.iter()
    }

    /// `node`'s affine blocks in the order Calico lists them (by BlockAffinity name).
    pub fn blocks_of(&self, node: &str) -> Vec<IpNet> {
        // The set is ordered by node first, so the node's affinities are one range (a scan of
        // every node's would make each assignment linear in the cluster size).
        let first = (node.to_owned(), IpNet::V4(ipnet::Ipv4Net::default()));
        let mut mine: Vec<IpNet> = self
            .affinities
            .range(first..)
            .take_while(|(n, _)| n == node)
            .map(|(_, b)| *b)
            .collect();
        mine.sort_by_key(|b| affinity_name(node, *b));
        mine
    }

    /// A block that exists already (a snapshot's dump): affine to `affinity` when given, as a
    /// claim of that node. An existing block of that CIDR is replaced.
    pub fn adopt(&mut self, block: Block) {
        let cidr = block.cidr();
        if let Some(node) = block.affinity() {
            self.affinities.insert((node.to_owned(), cidr));
            self.claims.push((node.to_owned(), cidr));
        }
        self.blocks.insert(cidr, block);
    }

    /// The block with this exact CIDR, to change.
    pub fn block_mut(&mut self, cidr: IpNet) -> Option<&mut Block> {
        self.blocks.get_mut(&cidr)
    }

    /// Delete one BlockAffinity (`kubectl delete blockaffinity`); false if there is none.
    pub fn delete_affinity(&mut self, node: &str, block: IpNet) -> bool {
        self.affinities.remove(&(node.to_owned(), block))
    }

    /// Claim the next block for `node` (`findUsableBlock` + claim): for each pool in order, walk
    /// from the node's seeded start index and take the first block that does not exist yet.
    /// Existing blocks are skipped whoever owns them — the caller asks for a new block because
    /// the node's own blocks are full (so Calico's "affine and has free addresses" case cannot
    /// arise), and a block another node created first is the claim conflict after which Calico
    /// retries and skips it. So a node's nth block is the first free one after its (n−1)th.
    pub fn claim(&mut self, node: &str) -> Result<IpNet, IpamError> {
        if self.pools.is_empty() {
            return Err(IpamError::NoPools { node: node.to_owned() });
        }
        if self.usable_affine(node).len() >= self.max_blocks_per_host as usize {
            return Err(IpamError::BlockLimit {
                limit: self.max_blocks_per_host,
            });
        }
        for pool in &self.pools {
            let start = start_index(node, pool);
            if let Some(cidr) = walk(pool, start)
                .map(|i| pool.block(i))
                .find(|c| !self.blocks.contains_key(c))
            {
                self.blocks.insert(cidr, Block::new(cidr, Some(node)));
                self.affinities.insert((node.to_owned(), cidr));
                self.claims.push((node.to_owned(), cidr));
                return Ok(cidr);
            }
        }
        Err(IpamError::NoFreeBlocks)
    }

    /// `autoAssign` for one address: the first affine block (inside an enabled pool) with a
    /// free address; else a new block (below `maxBlocksPerHost`); else, unless strict affinity,
    /// borrow from any existing block of the pools, walked in the node's order.
    pub fn auto_assign(&mut self, node: &str, handle: &str) -> Result<IpAddr, IpamError> {
        let affine = self.usable_affine(node);
        if let Some(cidr) = affine
            .into_iter()
            .find(|c| self.blocks.get(c).is_some_and(|b| b.free() > 0))
        {
            return self.assign_in(cidr, handle);
        }
        match self.claim(node) {
            Ok(cidr) => self.assign_in(cidr, handle),
            Err(IpamError::NoFreeBlocks) if self.strict_affinity => Err(IpamError::StrictAffinity),
            Err(IpamError::NoFreeBlocks) => self.borrow(node, handle),
            Err(e) => Err(e),
        }
    }

    /// Release an allocated address; its ordinal goes to the end of its block's list.
    pub fn release(&mut self, addr: IpAddr) -> Result<String, IpamError> {
        // The first block in CIDR order that contains `addr` (blocks of different sizes can
        // overlap after a pool change) is the one with the shortest prefix: look each prefix
        // length up instead of scanning every block.
        let max = IpNet::from(addr).max_prefix_len();
        let cidr = (0..=max)
            .filter_map(|len| IpNet::new(addr, len).ok().map(|n| n.trunc()))
            .find(|c| self.blocks.contains_key(c))
            .ok_or(IpamError::NotAllocated(addr))?;
        self.blocks
            .get_mut(&cidr)
            .ok_or(IpamError::NotAllocated(addr))?
            .release(addr)
    }

    /// `getAffineBlocks`: the node's affine blocks that lie inside an enabled pool.
    fn usable_affine(&self, node: &str) -> Vec<IpNet> {
        self.blocks_of(node)
            .into_iter()
            .filter(|b| self.pools.iter().any(|p| p.cidr.contains(b)))
            .collect()
    }

    /// Borrowing (`autoAssign` when no block can be claimed): for each pool, the existing
    /// blocks inside it in the node's walk order; the first with a free address serves,
    /// affinity unchanged.
    fn borrow(&mut self, node: &str, handle: &str) -> Result<IpAddr, IpamError> {
        for pool in &self.pools {
            let start = start_index(node, pool);
            let mask = pool.index_mask();
            let base = addr_bits(pool.cidr.network());
            let found = self
                .blocks
                .values()
                .filter(|b| pool.cidr.contains(&b.cidr()) && b.free() > 0)
                .min_by_key(|b| {
                    let index = (addr_bits(b.cidr().network()) - base)
                        .checked_shr(pool.host_bits())
                        .unwrap_or(0);
                    index.wrapping_sub(start) & mask
                })
                .map(Block::cidr);
            if let Some(cidr) = found {
                return self.assign_in(cidr, handle);
            }
        }
        Err(IpamError::PoolsExhausted {
            pools: self.pools.iter().map(|p| p.cidr).collect(),
        })
    }

    fn assign_in(&mut self, cidr: IpNet, handle: &str) -> Result<IpAddr, IpamError> {
        // Callers pass an existing block with a free address; a miss is reported, not a panic.
        self.blocks
            .get_mut(&cidr)
            .and_then(|b| b.assign(handle))
            .ok_or(IpamError::NoFreeBlocks)
    }
}

/// The encapsulations calico-node's `allocateip` gives a node a tunnel address for
/// (`node/pkg/allocateip/allocateip.go`; WireGuard and IPv6 are not modelled).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TunnelKind {
    Ipip,
    Vxlan,
}

impl TunnelKind {
    pub const ALL: [TunnelKind; 2] = [TunnelKind::Ipip, TunnelKind::Vxlan];

    /// The IPAM handle of `node`'s address (`generateHandleAndAttributes`).
    pub fn handle(self, node: &str) -> String {
        match self {
            TunnelKind::Ipip => format!("ipip-tunnel-addr-{node}"),
            TunnelKind::Vxlan => format!("vxlan-tunnel-addr-{node}"),
        }
    }

    /// The kind whose handle `handle` is, for `node`.
    pub fn of_handle(handle: &str, node: &str) -> Option<TunnelKind> {
        TunnelKind::ALL.into_iter().find(|k| k.handle(node) == handle)
    }

    /// The allocation's `type` attribute (`ipam.AttributeTypeIPIP` / `AttributeTypeVXLAN`).
    pub fn attr_type(self) -> &'static str {
        match self {
            TunnelKind::Ipip => "ipipTunnelAddress",
            TunnelKind::Vxlan => "vxlanTunnelAddress",
        }
    }

    /// The pool's mode for this encapsulation.
    pub fn mode(self, pool: &IpPool) -> EncapMode {
        match self {
            TunnelKind::Ipip => pool.ipip_mode,
            TunnelKind::Vxlan => pool.vxlan_mode,
        }
    }

    /// Where the Node keeps the address (`spec.bgp.ipv4IPIPTunnelAddr`,
    /// `spec.ipv4VXLANTunnelAddr`).
    pub fn addr(self, node: &Node) -> Option<Ipv4Addr> {
        match self {
            TunnelKind::Ipip => node.ipv4_ipip_tunnel_addr,
            TunnelKind::Vxlan => node.ipv4_vxlan_tunnel_addr,
        }
    }

    pub fn addr_mut(self, node: &mut Node) -> &mut Option<Ipv4Addr> {
        match self {
            TunnelKind::Ipip => &mut node.ipv4_ipip_tunnel_addr,
            TunnelKind::Vxlan => &mut node.ipv4_vxlan_tunnel_addr,
        }
    }
}

fn low_bits(n: u32) -> u128 {
    if n >= 128 {
        u128::MAX
    } else {
        (1u128 << n) - 1
    }
}

fn addr_bits(addr: IpAddr) -> u128 {
    match addr {
        IpAddr::V4(a) => u128::from(u32::from(a)),
        IpAddr::V6(a) => u128::from(a),
    }
}

fn to_addr(is_v4: bool, bits: u128) -> IpAddr {
    if is_v4 {
        // Only called with addresses inside an IPv4 pool, which fit 32 bits.
        IpAddr::V4(Ipv4Addr::from(bits as u32))
    } else {
        IpAddr::V6(Ipv6Addr::from(bits))
    }
}

fn net(is_v4: bool, bits: u128, prefix: u8) -> IpNet {
    // Prefix lengths come from a validated `Pool`, so construction cannot fail; fall back to the
    // host route rather than panic.
    let addr = to_addr(is_v4, bits);
    IpNet::new(addr, prefix).unwrap_or_else(|_| IpNet::from(addr))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pool(cidr: &str, size: u8) -> Pool {
        Pool::new(cidr.parse().expect("test CIDR"), size).expect("test pool")
    }

    #[test]
    fn fnv1_not_fnv1a() {
        // calico-ipam.md §2 worked example.
        assert_eq!(fnv1_32(b"k-master"), 1_770_363_195);
        assert_eq!(fnv1_32(b""), 2_166_136_261);
    }

    #[test]
    fn k_master_start_index() {
        // §3: draw 2016 rejected, 294 accepted → 10.66.73.128/26.
        let p = pool("10.66.0.0/16", 26);
        assert_eq!(start_index("k-master", &p), 294);
        assert_eq!(p.block(294).to_string(), "10.66.73.128/26");
        assert_eq!(p.block_index("10.66.73.128/26".parse().expect("net")), Some(294));
    }

    #[test]
    fn walk_wraps_once() {
        let p = pool("10.0.0.0/24", 26);
        assert_eq!(walk(&p, 2).collect::<Vec<_>>(), vec![2, 3, 0, 1]);
        let one = pool("10.1.2.0/26", 26);
        assert_eq!(walk(&one, 0).collect::<Vec<_>>(), vec![0]);
    }

    #[test]
    fn pool_validation() {
        let e = |c: &str, s| {
            Pool::new(c.parse().expect("net"), s)
                .map(|_| ())
                .map_err(|e| e.to_string())
        };
        assert!(e("10.66.1.0/16", 26).is_err_and(|m| m.contains("not strictly masked")));
        assert!(e("10.66.0.0/16", 19).is_err_and(|m| m.contains("IPv4 block size must be between 20 and 32")));
        assert!(e("fd00::/48", 64).is_err_and(|m| m.contains("IPv6 block size must be between 116 and 128")));
        assert!(e("10.66.0.0/27", 26).is_err_and(|m| m.contains("too small")));
        assert!(Pool::unvalidated("10.0.0.0/8".parse().expect("net"), 16).is_ok());
    }

    /// seed-lab.md s1: k-w1's tunnel address is ordinal 0 of its first block, pods follow.
    #[test]
    fn k_w1_tunnel_then_pods() {
        let mut a = BlockAllocator::new(vec![pool("10.66.0.0/16", 26)]);
        let tunnel = a.auto_assign("k-w1", &TunnelKind::Ipip.handle("k-w1")).expect("tunnel");
        assert_eq!(tunnel.to_string(), "10.66.207.64");
        let pods: Vec<String> = ["coredns-a", "kube-controllers", "coredns-b"]
            .iter()
            .map(|h| a.auto_assign("k-w1", h).expect("pod").to_string())
            .collect();
        assert_eq!(pods, ["10.66.207.65", "10.66.207.66", "10.66.207.67"]);
        assert_eq!(
            a.blocks_of("k-w1"),
            vec!["10.66.207.64/26".parse::<IpNet>().expect("net")]
        );
        let block = a.block("10.66.207.64/26".parse().expect("net")).expect("block");
        assert_eq!(block.affinity(), Some("k-w1"));
        assert_eq!(block.free(), 60);
        assert_eq!(block.handle_of(tunnel), Some("ipip-tunnel-addr-k-w1"));
    }

    /// Released addresses go to the end of Unallocated: reused only after every fresh one.
    #[test]
    fn release_is_fifo_after_fresh() {
        let mut b = Block::new("10.0.0.0/30".parse().expect("net"), Some("n"));
        let a0 = b.assign("h0").expect("a0");
        let a1 = b.assign("h1").expect("a1");
        assert_eq!(b.release(a0), Ok("h0".to_owned()));
        assert_eq!(b.release(a0), Err(IpamError::NotAllocated(a0)));
        assert_eq!(b.assign("h2").map(|a| a.to_string()), Some("10.0.0.2".into()));
        b.release(a1).expect("release a1");
        let order: Vec<String> = b.unallocated().map(|a| a.to_string()).collect();
        assert_eq!(order, ["10.0.0.3", "10.0.0.0", "10.0.0.1"]);
        assert_eq!(b.assign("h3").map(|a| a.to_string()), Some("10.0.0.3".into()));
        assert_eq!(b.assign("h4"), Some(a0));
        assert_eq!(b.assign("h5"), Some(a1));
        assert_eq!(b.assign("h6"), None);
    }

    #[test]
    fn full_block_claims_the_next() {
        // /26 pool with /28 blocks: four blocks.
        let p = Pool::unvalidated("10.0.0.0/26".parse().expect("net"), 28).expect("pool");
        let mut a = BlockAllocator::new(vec![p]);
        let first = a.auto_assign("n", "h0").expect("first");
        for h in 1..16 {
            a.auto_assign("n", &format!("h{h}")).expect("fill");
        }
        let next = a.auto_assign("n", "h16").expect("second block");
        assert_ne!(IpNet::from(first).trunc(), IpNet::from(next).trunc());
        assert_eq!(a.blocks_of("n").len(), 2);
        assert_eq!(a.claims().len(), 2);
    }

    #[test]
    fn borrowing_and_strict_affinity() {
        let one = || BlockAllocator::new(vec![pool("10.1.2.0/26", 26)]);
        let mut a = one();
        a.auto_assign("k-master", "t").expect("claims the only block");
        // Another node borrows from it (no affinity change).
        let b = a.auto_assign("node-1", "p").expect("borrowed");
        assert_eq!(b.to_string(), "10.1.2.1");
        assert_eq!(a.blocks_of("node-1"), Vec::<IpNet>::new());
        let mut s = one().with_strict_affinity(true);
        s.auto_assign("k-master", "t").expect("claim");
        assert_eq!(s.auto_assign("node-1", "p"), Err(IpamError::StrictAffinity));
        // Exhaustion: fill the block, then nobody gets an address.
        for h in 2..64 {
            a.auto_assign("node-1", &format!("p{h}")).expect("fill");
        }
        let e = a.auto_assign("node-1", "last").expect_err("exhausted");
        assert_eq!(e.to_string(), "No IPs available in pools: [10.1.2.0/26]");
    }

    /// A node's blocks are its own even when another node's name extends it; release finds
    /// an address's block among many.
    #[test]
    fn per_node_lookup_and_release() {
        let mut a = BlockAllocator::new(vec![pool("10.0.0.0/16", 26)]);
        let mut addrs = Vec::new();
        for node in ["n1", "n", "m", "n10"] {
            addrs.push(a.auto_assign(node, &format!("h-{node}")).expect("assign"));
        }
        for node in ["n1", "n", "m", "n10"] {
            assert_eq!(a.blocks_of(node).len(), 1, "{node}");
        }
        assert_eq!(a.release(addrs[1]), Ok("h-n".to_owned()));
        assert_eq!(a.release(addrs[1]), Err(IpamError::NotAllocated(addrs[1])));
        let outside = "10.1.0.1".parse().expect("addr");
        assert_eq!(a.release(outside), Err(IpamError::NotAllocated(outside)));
    }

    #[test]
    fn block_limit() {
        let mut a = BlockAllocator::new(vec![pool("10.0.0.0/16", 26)]).with_max_blocks_per_host(2);
        a.claim("n").expect("1");
        a.claim("n").expect("2");
        let e = a.claim("n").expect_err("limit");
        assert_eq!(e, IpamError::BlockLimit { limit: 2 });
        assert_eq!(e.to_string(), "cannot allocate new block due to per host block limit");
    }

    #[test]
    fn no_pools() {
        let e = BlockAllocator::new(vec![]).claim("k-w1").expect_err("no pools");
        assert_eq!(e.to_string(), "no configured Calico pools for node k-w1");
    }

    #[test]
    fn affinity_names() {
        let n = "10.66.207.64/26".parse().expect("net");
        assert_eq!(affinity_name("k-w1", n), "k-w1-10-66-207-64-26");
    }
}
