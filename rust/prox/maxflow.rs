//! Maximum flow on small networks with real capacities, by the augmenting-path algorithm of
//! Boykov & Kolmogorov (2004): the minimum-cut oracle of the exact 2-D total-variation block
//! solve ([`crate::prox::grid`]). Two search trees grow from the source and the sink; where they
//! meet, a path is augmented, and the nodes cut off from their root look for a new parent
//! before they are freed. The trees are kept between augmentations, which suits grid graphs
//! (short paths, a terminal arc at every node) far better than breadth-first phases.
//!
//! Before the trees grow, [`FlowNetwork::max_flow`] makes one pass: the terminals routed along a
//! spanning forest of the arcs with the most spare capacity, as far as each arc has room. The
//! search then routes what is left. Near a fit's optimum that is mostly nothing: a flat region
//! of the 2-D block solve, its flows warm-started, needs only the small change of its excess
//! routed, for which the search took an augmentation per node.
//!
//! Every node has one terminal capacity: positive from the source, negative to the sink.
//! Arcs come in pairs (arc `a` and its reverse `a ^ 1`), so an undirected edge of capacity
//! `c` is one pair with capacity `c` each way. Each pair also keeps the net flow pushed along
//! it ([`FlowNetwork::flow`]): read as the capacity minus the residual, a flow far below the
//! capacity would keep only the digits above the capacity's rounding. Nothing recurses, and
//! every buffer is kept between solves.

use std::collections::VecDeque;

const FREE: u8 = 0;
const SOURCE: u8 = 1;
const SINK: u8 = 2;
/// Parent marks: a root (its parent is its terminal), an orphan, no tree.
const TERMINAL: u32 = u32::MAX;
const ORPHAN: u32 = u32::MAX - 1;
const NONE: u32 = u32::MAX - 2;

/// A flow network and the buffers of [`FlowNetwork::max_flow`].
#[derive(Debug, Clone, Default)]
pub struct FlowNetwork {
    n: usize,
    /// Head and tail of each arc, and its residual capacity.
    head: Vec<u32>,
    tail: Vec<u32>,
    residual: Vec<f64>,
    /// Each arc pair's net flow pushed along its forward arc (arc `2 i` for pair `i`).
    pushed: Vec<f64>,
    /// Each node's terminal residual: from the source (> 0) or to the sink (< 0).
    terminal: Vec<f64>,
    /// Arcs grouped by tail: node `u`'s arcs and their heads are `order[start[u]..start[u + 1]]`
    /// (the head beside the arc: the searches read one array).
    start: Vec<u32>,
    order: Vec<(u32, u32)>,
    tree: Vec<u8>,
    /// The arc from a node to its parent (or a mark).
    parent: Vec<u32>,
    /// The parent itself (the head of `parent`, where that is an arc): the walks up a tree
    /// read one array.
    up: Vec<u32>,
    /// The adoption round in which a node was last found rooted ([`FlowNetwork::rooted`]), and
    /// the current round: within one round a rooted node stays rooted, so a walk up a tree
    /// stops at the first node found rooted before.
    stamp: Vec<u32>,
    round: u32,
    /// The (node, parent arc) steps of the path being augmented.
    path: Vec<(u32, u32)>,
    active: VecDeque<u32>,
    in_active: Vec<bool>,
    orphans: VecDeque<u32>,
    queue: Vec<u32>,
    slot: Vec<u32>,
    /// The buffers of [`FlowNetwork::route_on_forest`]: arc pairs by spare capacity, the
    /// union–find links, which pairs are in the forest, each node's arc up to its parent
    /// there, the nodes from the roots down, and the sum of the terminals below each node.
    by_slack: Vec<u64>,
    link: Vec<u32>,
    in_forest: Vec<bool>,
    via: Vec<u32>,
    downward: Vec<u32>,
    below: Vec<f64>,
}

impl FlowNetwork {
    /// Empties the network and gives it `n` nodes without terminal capacities.
    pub fn reset(&mut self, n: usize) {
        self.n = n;
        self.head.clear();
        self.tail.clear();
        self.residual.clear();
        self.pushed.clear();
        self.terminal.clear();
        self.terminal.resize(n, 0.0);
    }

    /// Sets node `u`'s terminal capacity: `cap > 0` from the source, `cap < 0` to the sink.
    pub fn set_terminal(&mut self, u: usize, cap: f64) {
        self.terminal[u] = cap;
    }

    /// Adds the arc `u → v` with capacity `cap` and its reverse `v → u` with capacity
    /// `reverse`; returns the forward arc's index.
    pub fn add_edge(&mut self, u: usize, v: usize, cap: f64, reverse: f64) -> usize {
        debug_assert!(u < self.n && v < self.n);
        let a = self.head.len();
        self.head.extend([v as u32, u as u32]);
        self.tail.extend([u as u32, v as u32]);
        self.residual.extend([cap, reverse]);
        self.pushed.push(0.0);
        a
    }

    /// The residual capacity of arc `a` (after [`FlowNetwork::max_flow`]).
    pub fn residual(&self, a: usize) -> f64 {
        self.residual[a]
    }

    /// The net flow that [`FlowNetwork::max_flow`] pushed along arc `a` (negative: along its
    /// reverse), summed push by push: exact to the rounding of the flow itself, however large
    /// the capacities.
    pub fn flow(&self, a: usize) -> f64 {
        let f = self.pushed[a >> 1];
        if a & 1 == 0 {
            f
        } else {
            -f
        }
    }

    /// Pushes `f` along arc `a`.
    fn push(&mut self, a: usize, f: f64) {
        self.residual[a] -= f;
        self.residual[a ^ 1] += f;
        self.pushed[a >> 1] += if a & 1 == 0 { f } else { -f };
    }

    fn arcs(&self, u: usize) -> std::ops::Range<usize> {
        self.start[u] as usize..self.start[u + 1] as usize
    }

    /// The `i`-th entry of the arcs by tail ([`FlowNetwork::arcs`]): the arc and its head.
    fn arc(&self, i: usize) -> (usize, usize) {
        let (a, head) = self.order[i];
        (a as usize, head as usize)
    }

    /// Pushes a maximum flow from the source to the sink, counting capacities of at most
    /// `eps` as saturated; returns its value. First one pass along a spanning forest
    /// ([`FlowNetwork::route_on_forest`]), then the two search trees route what it left.
    pub fn max_flow(&mut self, eps: f64) -> f64 {
        let demand = |t: &[f64]| t.iter().map(|&t| (-t).max(0.0)).sum::<f64>();
        let before = demand(&self.terminal);
        self.arcs_by_tail();
        self.route_on_forest();
        let n = self.n;
        self.tree.clear();
        self.tree.resize(n, FREE);
        self.parent.clear();
        self.parent.resize(n, NONE);
        self.up.clear();
        self.up.resize(n, 0);
        self.stamp.clear();
        self.stamp.resize(n, 0);
        self.round = 0;
        self.in_active.clear();
        self.in_active.resize(n, false);
        self.active.clear();
        self.orphans.clear();
        for u in 0..n {
            let t = self.terminal[u];
            if t > eps || t < -eps {
                self.tree[u] = if t > 0.0 { SOURCE } else { SINK };
                self.parent[u] = TERMINAL;
                self.activate(u);
            }
        }
        while let Some(bridge) = self.grow(eps) {
            self.augment(bridge, eps);
            self.adopt(eps);
        }
        before - demand(&self.terminal)
    }

    /// Groups the arcs by tail (counting sort): [`FlowNetwork::arcs`].
    fn arcs_by_tail(&mut self) {
        let n = self.n;
        self.start.clear();
        self.start.resize(n + 1, 0);
        for &u in &self.tail {
            self.start[u as usize + 1] += 1;
        }
        for u in 0..n {
            self.start[u + 1] += self.start[u];
        }
        self.order.clear();
        self.order.resize(self.head.len(), (0, 0));
        self.slot.clear();
        self.slot.extend_from_slice(&self.start[..n]);
        for (a, &u) in self.tail.iter().enumerate() {
            self.order[self.slot[u as usize] as usize] = (a as u32, self.head[a]);
            self.slot[u as usize] += 1;
        }
    }

    /// Routes the terminals along a spanning forest (arcs grouped by tail). Its arc pairs are
    /// chosen by their spare capacity both ways, the smaller of the two residuals, largest
    /// first (Kruskal's rule). Leaves first, each node sends up its arc what room there is of
    /// its terminal and what its children sent; what does not fit stays its terminal, as does
    /// each root's sum. Pushing any flow within the capacities changes every cut's value by
    /// the same constant (the terminals move with the flow), so the minimum cuts are those of
    /// the network before, and the search routes what is left: nothing, where every forest
    /// arc had room and each tree's terminals add up to zero.
    fn route_on_forest(&mut self) {
        let n = self.n;
        let pairs = self.pushed.len();
        // Each pair's key: its spare capacity (as an `f32`, whose bits order non-negative
        // values as the values do) above its index, sorted as plain integers and read from the
        // largest: ties (in `f32`) by lowest index. The sort by a comparison of the two
        // residuals was 5.3% of `227_cpu_small`'s default fit, this one 1.8%.
        let residual = &self.residual;
        self.by_slack.clear();
        self.by_slack.extend((0..pairs).map(|i| {
            let slack = residual[2 * i].min(residual[2 * i + 1]).max(0.0) as f32;
            (u64::from(slack.to_bits()) << 32) | u64::from(u32::MAX - i as u32)
        }));
        self.by_slack.sort_unstable();
        let link = &mut self.link;
        link.clear();
        link.extend(0..n as u32);
        let find = |link: &mut Vec<u32>, mut x: u32| {
            while link[x as usize] != x {
                link[x as usize] = link[link[x as usize] as usize];
                x = link[x as usize];
            }
            x
        };
        self.in_forest.clear();
        self.in_forest.resize(pairs, false);
        let mut joined = 0;
        for &key in self.by_slack.iter().rev() {
            if joined + 1 >= n {
                break;
            }
            let i = u32::MAX - key as u32;
            let a = 2 * i as usize;
            let (ru, rv) = (find(link, self.tail[a]), find(link, self.head[a]));
            if ru != rv {
                link[ru as usize] = rv;
                self.in_forest[i as usize] = true;
                joined += 1;
            }
        }
        // Each tree from its root down (breadth first), each node's arc up to its parent.
        self.via.clear();
        self.via.resize(n, NONE);
        self.downward.clear();
        for root in 0..n {
            if self.via[root] != NONE {
                continue;
            }
            self.via[root] = TERMINAL;
            let mut i = self.downward.len();
            self.downward.push(root as u32);
            while i < self.downward.len() {
                let u = self.downward[i] as usize;
                i += 1;
                for j in self.arcs(u) {
                    let (a, v) = self.arc(j);
                    if self.in_forest[a >> 1] && self.via[v] == NONE {
                        self.via[v] = (a ^ 1) as u32;
                        self.downward.push(v as u32);
                    }
                }
            }
        }
        // Leaves first, each node sends up what its arc has room for of the terminals below it.
        self.below.clear();
        self.below.extend_from_slice(&self.terminal);
        for i in (0..n).rev() {
            let u = self.downward[i] as usize;
            let s = self.below[u];
            match self.via[u] {
                TERMINAL => self.terminal[u] = s,
                a => {
                    let a = a as usize;
                    let sent = s.min(self.residual[a]).max(-self.residual[a ^ 1]);
                    self.push(a, sent);
                    self.terminal[u] = s - sent;
                    self.below[self.head[a] as usize] += sent;
                }
            }
        }
    }

    fn activate(&mut self, u: usize) {
        if !self.in_active[u] {
            self.in_active[u] = true;
            self.active.push_back(u as u32);
        }
    }

    /// Whether flow can go from `tree`'s side across arc `a` (`a`'s tail in the tree): along
    /// `a` in the source tree, against it in the sink tree.
    fn open(&self, tree: u8, a: usize, eps: f64) -> bool {
        if tree == SOURCE {
            self.residual[a] > eps
        } else {
            self.residual[a ^ 1] > eps
        }
    }

    /// Grows the trees from their active nodes until they meet: returns the arc from the
    /// source tree into the sink tree, or `None` when no path is left.
    fn grow(&mut self, eps: f64) -> Option<usize> {
        while let Some(&p) = self.active.front() {
            let p = p as usize;
            let tp = self.tree[p];
            if tp != FREE {
                for i in self.arcs(p) {
                    let (a, q) = self.arc(i);
                    if !self.open(tp, a, eps) {
                        continue;
                    }
                    if self.tree[q] == FREE {
                        self.tree[q] = tp;
                        self.parent[q] = (a ^ 1) as u32;
                        self.up[q] = p as u32;
                        self.activate(q);
                    } else if self.tree[q] != tp {
                        // `p` stays active: it may lead to more paths.
                        return Some(if tp == SOURCE { a } else { a ^ 1 });
                    }
                }
            }
            self.active.pop_front();
            self.in_active[p] = false;
        }
        None
    }

    /// Augments the path through `bridge` by its bottleneck; the nodes whose tree arc (or
    /// terminal) it saturates become orphans. Returns the flow pushed. The walk up each tree
    /// is recorded (`path`), so the second pass reads no parent.
    fn augment(&mut self, bridge: usize, eps: f64) -> f64 {
        let mut f = self.residual[bridge];
        self.path.clear();
        // Source side: flow runs from each parent down along `parent ^ 1`.
        let mut x = self.tail[bridge] as usize;
        while self.parent[x] != TERMINAL {
            let a = self.parent[x] as usize;
            f = f.min(self.residual[a ^ 1]);
            self.path.push((x as u32, a as u32));
            x = self.up[x] as usize;
        }
        let (root_s, split) = (x, self.path.len());
        f = f.min(self.terminal[x]);
        let mut y = self.head[bridge] as usize;
        while self.parent[y] != TERMINAL {
            let a = self.parent[y] as usize;
            f = f.min(self.residual[a]);
            self.path.push((y as u32, a as u32));
            y = self.up[y] as usize;
        }
        f = f.min(-self.terminal[y]);
        self.push(bridge, f);
        for i in 0..split {
            let (x, a) = self.path[i];
            let a = a as usize;
            self.push(a ^ 1, f);
            if self.residual[a ^ 1] <= eps {
                self.parent[x as usize] = ORPHAN;
                self.orphans.push_back(x);
            }
        }
        self.terminal[root_s] -= f;
        if self.terminal[root_s] <= eps {
            self.parent[root_s] = ORPHAN;
            self.orphans.push_back(root_s as u32);
        }
        for i in split..self.path.len() {
            let (y, a) = self.path[i];
            let a = a as usize;
            self.push(a, f);
            if self.residual[a] <= eps {
                self.parent[y as usize] = ORPHAN;
                self.orphans.push_back(y);
            }
        }
        self.terminal[y] += f;
        if self.terminal[y] >= -eps {
            self.parent[y] = ORPHAN;
            self.orphans.push_back(y as u32);
        }
        f
    }

    /// Whether `q`'s path of parents ends at a terminal (not at an orphan), or at a node found
    /// rooted earlier in this adoption round; the nodes of a rooted path are marked so. (In one
    /// round orphans only find rooted parents or are freed, and a node is orphaned only below
    /// a freed one, so a rooted path stays rooted until the next augmentation.)
    fn rooted(&mut self, q: usize) -> bool {
        let mut x = q;
        while self.stamp[x] != self.round {
            match self.parent[x] {
                TERMINAL => break,
                ORPHAN | NONE => return false,
                _ => x = self.up[x] as usize,
            }
        }
        let mut x = q;
        while self.stamp[x] != self.round {
            self.stamp[x] = self.round;
            if self.parent[x] == TERMINAL {
                break;
            }
            x = self.up[x] as usize;
        }
        true
    }

    /// Finds each orphan a new parent in its tree, or frees it (its children become orphans,
    /// and its neighbours that could regrow into it become active).
    fn adopt(&mut self, eps: f64) {
        self.round += 1;
        while let Some(p) = self.orphans.pop_front() {
            let p = p as usize;
            let tp = self.tree[p];
            let mut found = None;
            for i in self.arcs(p) {
                let (a, q) = self.arc(i);
                // Flow must reach `p` from `q` (source tree) or `q` from `p` (sink tree).
                if self.tree[q] == tp && self.open(tp, a ^ 1, eps) && self.rooted(q) {
                    found = Some((a, q));
                    break;
                }
            }
            if let Some((a, q)) = found {
                self.parent[p] = a as u32;
                self.up[p] = q as u32;
                self.stamp[p] = self.round;
                continue;
            }
            for i in self.arcs(p) {
                let (a, q) = self.arc(i);
                if self.tree[q] != tp {
                    continue;
                }
                if self.open(tp, a ^ 1, eps) {
                    self.activate(q);
                }
                let pq = self.parent[q];
                if pq < NONE && self.up[q] as usize == p {
                    self.parent[q] = ORPHAN;
                    self.orphans.push_back(q as u32);
                }
            }
            self.tree[p] = FREE;
            self.parent[p] = NONE;
        }
    }

    /// After [`FlowNetwork::max_flow`]: marks in `out` the nodes reachable from the source
    /// over residuals above `eps` (the source side of the smallest minimum cut).
    pub fn source_side(&mut self, eps: f64, out: &mut Vec<bool>) {
        out.clear();
        out.resize(self.n, false);
        self.queue.clear();
        for u in 0..self.n {
            if self.terminal[u] > eps {
                out[u] = true;
                self.queue.push(u as u32);
            }
        }
        let mut i = 0;
        while i < self.queue.len() {
            let u = self.queue[i] as usize;
            i += 1;
            for j in self.arcs(u) {
                let (a, v) = self.arc(j);
                if !out[v] && self.residual[a] > eps {
                    out[v] = true;
                    self.queue.push(v as u32);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The smallest cut over every source side, by enumeration: terminal capacities `t`
    /// (> 0 from the source, < 0 to the sink) and arcs among the nodes.
    fn brute_min_cut(t: &[f64], arcs: &[(usize, usize, f64)]) -> f64 {
        let n = t.len();
        let mut best = f64::INFINITY;
        for mask in 0..(1u32 << n) {
            let side = |v: usize| mask >> v & 1 == 1;
            let mut cut: f64 = arcs
                .iter()
                .filter(|&&(u, v, _)| side(u) && !side(v))
                .map(|a| a.2)
                .sum();
            for (v, &c) in t.iter().enumerate() {
                if c > 0.0 && !side(v) {
                    cut += c;
                } else if c < 0.0 && side(v) {
                    cut -= c;
                }
            }
            best = best.min(cut);
        }
        best
    }

    #[test]
    fn max_flow_equals_the_minimum_cut_on_random_networks() {
        // A small linear congruential generator keeps the test free of dependencies.
        let mut state = 12345u64;
        let mut next = || {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            (state >> 33) as f64 / (1u64 << 31) as f64
        };
        let mut g = FlowNetwork::default();
        for case in 0..400 {
            let n = 1 + case % 9;
            let mut arcs = Vec::new();
            g.reset(n);
            let t: Vec<f64> = (0..n)
                .map(|_| ((next() - 0.5) * 6.0 * 8.0).round() / 8.0)
                .collect();
            for (u, &c) in t.iter().enumerate() {
                g.set_terminal(u, c);
            }
            for u in 0..n {
                for v in u + 1..n {
                    if next() < 0.5 {
                        let c = (next() * 2.0 * 8.0).round() / 8.0;
                        let r = if next() < 0.5 {
                            c
                        } else {
                            (next() * 8.0).round() / 8.0
                        };
                        arcs.push((u, v, c));
                        arcs.push((v, u, r));
                        g.add_edge(u, v, c, r);
                    }
                }
            }
            let flow = g.max_flow(1e-12);
            let want = brute_min_cut(&t, &arcs);
            assert!((flow - want).abs() < 1e-9, "case {case}: {flow} vs {want}");
            // The source side is a minimum cut.
            let mut side = Vec::new();
            g.source_side(1e-12, &mut side);
            let mut cut: f64 = arcs
                .iter()
                .filter(|&&(u, v, _)| side[u] && !side[v])
                .map(|a| a.2)
                .sum();
            for (v, &c) in t.iter().enumerate() {
                if (c > 0.0 && !side[v]) || (c < 0.0 && side[v]) {
                    cut += c.abs();
                }
            }
            assert!(
                (cut - want).abs() < 1e-9,
                "case {case}: cut {cut} vs {want}"
            );
        }
    }

    /// The maximum flow and the smallest minimum cut's source side by Edmonds–Karp (shortest
    /// augmenting paths on a dense residual matrix, source `n` and sink `n + 1`): an
    /// independent reference for networks too large to enumerate.
    fn edmonds_karp(t: &[f64], arcs: &[(usize, usize, f64)]) -> (f64, Vec<bool>) {
        let n = t.len();
        let (s, k) = (n, n + 1);
        let mut cap = vec![vec![0.0f64; n + 2]; n + 2];
        for (u, &c) in t.iter().enumerate() {
            if c > 0.0 {
                cap[s][u] += c;
            } else {
                cap[u][k] -= c;
            }
        }
        for &(u, v, c) in arcs {
            cap[u][v] += c;
        }
        let reach = |cap: &Vec<Vec<f64>>| {
            let mut prev = vec![usize::MAX; n + 2];
            prev[s] = s;
            let mut queue = std::collections::VecDeque::from([s]);
            while let Some(u) = queue.pop_front() {
                for v in 0..n + 2 {
                    if prev[v] == usize::MAX && cap[u][v] > 1e-12 {
                        prev[v] = u;
                        queue.push_back(v);
                    }
                }
            }
            prev
        };
        let mut flow = 0.0;
        loop {
            let prev = reach(&cap);
            if prev[k] == usize::MAX {
                return (flow, (0..n).map(|u| prev[u] != usize::MAX).collect());
            }
            let mut f = f64::INFINITY;
            let mut v = k;
            while v != s {
                f = f.min(cap[prev[v]][v]);
                v = prev[v];
            }
            let mut v = k;
            while v != s {
                cap[prev[v]][v] -= f;
                cap[v][prev[v]] += f;
                v = prev[v];
            }
            flow += f;
        }
    }

    /// Grid networks as the 2-D block solve builds them (a terminal capacity at nearly every
    /// node, each edge `λ ∓ f` one way and the other), up to 9 × 9 nodes: many augmentations
    /// and adoptions, deep trees. The flow and the source side equal Edmonds–Karp's, and the
    /// arcs' flows ([`FlowNetwork::flow`]) carry exactly what each node took from its terminal,
    /// within their capacities, also at `λ = 1e15`, where `λ` less a residual keeps only
    /// multiples of 1/8.
    #[test]
    fn grid_networks_match_edmonds_karp() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(7);
        let mut g = FlowNetwork::default();
        let mut side = Vec::new();
        // Multiples of 1/16: sums along any path stay exact.
        let mut q = |lo: f64, hi: f64| (rng.random_range(lo..hi) * 16.0).round() / 16.0;
        for case in 0..300 {
            let (rows, cols) = (2 + case % 8, 2 + (case / 8) % 8);
            let n = rows * cols;
            g.reset(n);
            let t: Vec<f64> = (0..n).map(|_| q(-3.0, 3.0)).collect();
            for (u, &c) in t.iter().enumerate() {
                g.set_terminal(u, c);
            }
            let mut arcs = Vec::new();
            for r in 0..rows {
                for c in 0..cols {
                    let u = r * cols + c;
                    let right = (c + 1 < cols).then_some(u + 1);
                    let down = (r + 1 < rows).then_some(u + cols);
                    for v in right.into_iter().chain(down) {
                        let lambda = if case % 2 == 0 { 1.0 } else { 1e15 };
                        let f = q(-1.0, 1.0);
                        g.add_edge(u, v, lambda - f, lambda + f);
                        arcs.push((u, v, lambda - f));
                        arcs.push((v, u, lambda + f));
                    }
                }
            }
            let flow = g.max_flow(1e-12);
            g.source_side(1e-12, &mut side);
            let (want, want_side) = edmonds_karp(&t, &arcs);
            assert!((flow - want).abs() < 1e-9, "case {case}: {flow} vs {want}");
            assert_eq!(side, want_side, "case {case}");
            for (u, &c) in t.iter().enumerate() {
                let out: f64 = g.arcs(u).map(|i| g.flow(g.arc(i).0)).sum();
                assert_eq!(out, c - g.terminal[u], "case {case}, node {u}");
            }
            for (a, &(_, _, cap)) in arcs.iter().enumerate() {
                assert!(
                    g.flow(a) <= cap && g.flow(a ^ 1) == -g.flow(a),
                    "case {case}"
                );
            }
        }
    }

    /// A `rows × cols` grid network as the 2-D block solve builds them (each edge `1 ∓ f`
    /// one way and the other, `|f| ≤ 1/2`), terminals `t`; returns it with its arcs.
    fn grid_network(
        (rows, cols): (usize, usize),
        t: &[f64],
        f: &[f64],
    ) -> (FlowNetwork, Vec<(usize, usize, f64)>) {
        let mut g = FlowNetwork::default();
        g.reset(rows * cols);
        for (u, &c) in t.iter().enumerate() {
            g.set_terminal(u, c);
        }
        let mut arcs = Vec::new();
        for u in 0..rows * cols {
            let right = (u % cols + 1 < cols).then_some(u + 1);
            let down = (u / cols + 1 < rows).then_some(u + cols);
            for v in right.into_iter().chain(down) {
                let f = f[arcs.len() / 2];
                g.add_edge(u, v, 1.0 - f, 1.0 + f);
                arcs.push((u, v, 1.0 - f));
                arcs.push((v, u, 1.0 + f));
            }
        }
        (g, arcs)
    }

    /// The pass along a spanning forest ([`FlowNetwork::route_on_forest`]) on grid networks.
    /// It leaves every arc's flow within its capacity and every node's terminal less what its
    /// arcs carry. Terminals that add up to zero and are small beside every arc's spare
    /// capacity (a flat region's change near a fit's optimum) it routes whole; larger ones or
    /// ones that do not add up to zero only in part. Then `max_flow`, the pass and the search,
    /// equals Edmonds–Karp in flow and source side.
    #[test]
    fn a_forest_routes_small_balanced_terminals_and_leaves_the_rest_to_the_search() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(11);
        let mut side = Vec::new();
        let (mut whole, mut part) = (0, 0);
        for case in 0..300 {
            let (rows, cols) = (1 + case % 8, 2 + (case / 8) % 8);
            let n = rows * cols;
            // Multiples of 1/1024 (sums stay exact), at most 4/1024 each, so the forest's
            // sums stay below the spare capacity of 1/2; scaled up by 128 in a third of cases.
            let scale = if case % 3 == 1 { 128.0 } else { 1.0 };
            let mut t: Vec<f64> = (0..n)
                .map(|_| f64::from(rng.random_range(-4i32..=4)) / 1024.0 * scale)
                .collect();
            let sum: f64 = t[..n - 1].iter().sum();
            t[n - 1] = if case % 3 == 2 {
                3.0 / 1024.0 - sum
            } else {
                -sum
            };
            let edges = rows * (cols - 1) + (rows - 1) * cols;
            let f: Vec<f64> = (0..edges)
                .map(|_| f64::from(rng.random_range(-8i32..=8)) / 16.0)
                .collect();
            let (mut g, arcs) = grid_network((rows, cols), &t, &f);
            g.arcs_by_tail();
            g.route_on_forest();
            for (u, &c) in t.iter().enumerate() {
                let out: f64 = g.arcs(u).map(|i| g.flow(g.arc(i).0)).sum();
                assert_eq!(out, c - g.terminal[u], "case {case}, node {u}");
            }
            for (a, &(_, _, cap)) in arcs.iter().enumerate() {
                assert!(g.flow(a) <= cap, "case {case}, arc {a}");
            }
            let left = g.terminal.iter().filter(|&&t| t != 0.0).count();
            match case % 3 {
                0 => assert_eq!(left, 0, "case {case}: small balanced terminals left"),
                2 => assert!(left > 0, "case {case}: unbalanced terminals all routed"),
                _ if left == 0 => whole += 1,
                _ => part += 1,
            }
            let (want, want_side) = edmonds_karp(&t, &arcs);
            let (mut g, _) = grid_network((rows, cols), &t, &f);
            let flow = g.max_flow(1e-12);
            g.source_side(1e-12, &mut side);
            assert!((flow - want).abs() < 1e-9, "case {case}: {flow} vs {want}");
            assert_eq!(side, want_side, "case {case}");
        }
        assert!(whole > 10 && part > 10, "{whole} whole, {part} in part");
    }

    #[test]
    fn long_paths_need_no_recursion() {
        // A path of 200,000 nodes: a recursive search would overflow the stack.
        let n = 200_000;
        let mut g = FlowNetwork::default();
        g.reset(n);
        g.set_terminal(0, 5.0);
        g.set_terminal(n - 1, -5.0);
        for u in 0..n - 1 {
            g.add_edge(u, u + 1, 1.0 + (u % 3) as f64, 0.0);
        }
        assert_eq!(g.max_flow(0.0), 1.0);
    }
}
