//! The link graph and link resolution.

use std::collections::{HashMap, HashSet, VecDeque};

use pkm_core::{KbError, KbResult, VaultPath};

use crate::app::App;
use crate::dto::{self, GraphData, GraphEdge, GraphNode, ResolveResult, ResolvedPage};

/// The whole graph, or the pages within `depth` hops (links followed both ways) of `path`.
/// Nodes are pages (id = path); edges are resolved links, one per (source, target) pair.
pub fn get_graph_data(app: &App, path: Option<&VaultPath>, depth: usize) -> KbResult<GraphData> {
    app.wait_ready()?;
    let resolver = app.resolver()?;
    let pages = resolver.pages();
    let index_of: HashMap<&str, usize> = pages
        .iter()
        .enumerate()
        .map(|(i, p)| (p.path.as_str(), i))
        .collect();

    let mut edge_set: HashSet<(usize, usize)> = HashSet::new();
    let mut edges: Vec<(usize, usize, Option<String>)> = Vec::new();
    for link in app.store.all_links().map_err(KbError::from)? {
        let (Some(&s), Some(t)) = (
            index_of.get(link.source_page.as_str()),
            resolver.resolve(&link.target),
        ) else {
            continue;
        };
        let Some(&t) = index_of.get(t.path.as_str()) else {
            continue;
        };
        if s != t && edge_set.insert((s, t)) {
            edges.push((s, t, link.alias));
        }
    }

    let keep: Option<HashSet<usize>> = match path {
        None => None,
        Some(p) => {
            let &start = index_of
                .get(p.as_str())
                .ok_or_else(|| KbError::not_found(p.as_str()))?;
            let mut adj: HashMap<usize, Vec<usize>> = HashMap::new();
            for &(s, t, _) in &edges {
                adj.entry(s).or_default().push(t);
                adj.entry(t).or_default().push(s);
            }
            let mut seen = HashSet::from([start]);
            let mut queue = VecDeque::from([(start, 0usize)]);
            while let Some((n, d)) = queue.pop_front() {
                if d == depth {
                    continue;
                }
                for &m in adj.get(&n).map(Vec::as_slice).unwrap_or(&[]) {
                    if seen.insert(m) {
                        queue.push_back((m, d + 1));
                    }
                }
            }
            Some(seen)
        }
    };
    let kept = |i: &usize| keep.as_ref().is_none_or(|k| k.contains(i));
    let edges: Vec<(usize, usize, Option<String>)> = edges
        .into_iter()
        .filter(|(s, t, _)| kept(s) && kept(t))
        .collect();
    let mut degree: HashMap<usize, usize> = HashMap::new();
    for (s, t, _) in &edges {
        *degree.entry(*s).or_default() += 1;
        *degree.entry(*t).or_default() += 1;
    }
    let mut nodes: Vec<GraphNode> = pages
        .iter()
        .enumerate()
        .filter(|(i, _)| kept(i))
        .map(|(i, p)| GraphNode {
            id: p.path.clone(),
            title: p.title.clone(),
            path: p.path.clone(),
            tags: p.tags.clone(),
            degree: degree.get(&i).copied().unwrap_or(0),
        })
        .collect();
    nodes.sort_by(|a, b| b.degree.cmp(&a.degree).then_with(|| a.path.cmp(&b.path)));
    let mut edges: Vec<GraphEdge> = edges
        .into_iter()
        .filter_map(|(s, t, label)| {
            Some(GraphEdge {
                source: pages.get(s)?.path.clone(),
                target: pages.get(t)?.path.clone(),
                label,
            })
        })
        .collect();
    edges.sort_by(|a, b| (&a.source, &a.target).cmp(&(&b.source, &b.target)));

    // Keep the response under the cap: the best-connected nodes first, and only edges between
    // the nodes kept.
    let node_fit = dto::fit_to_budget(&nodes, dto::LIST_BUDGET_BYTES / 2);
    let truncated_nodes = node_fit < nodes.len();
    nodes.truncate(node_fit);
    if truncated_nodes {
        let ids: HashSet<&str> = nodes.iter().map(|n| n.id.as_str()).collect();
        edges.retain(|e| ids.contains(e.source.as_str()) && ids.contains(e.target.as_str()));
    }
    let edge_fit = dto::fit_to_budget(&edges, dto::LIST_BUDGET_BYTES / 2);
    let truncated = truncated_nodes || edge_fit < edges.len();
    edges.truncate(edge_fit);
    Ok(GraphData {
        node_count: nodes.len(),
        edge_count: edges.len(),
        nodes,
        edges,
        vault_path: app.vault.root().display().to_string(),
        truncated,
    })
}

/// The note a `[[wiki-link]]` target names, or `unresolved: true`.
pub fn resolve_link_target(app: &App, target: &str) -> KbResult<ResolveResult> {
    app.wait_ready()?;
    let resolver = app.resolver()?;
    let resolved = resolver.resolve(target).map(|p| ResolvedPage {
        slug: pkm_core::path::slug_of(&p.path).to_owned(),
        path: p.path.clone(),
        title: p.title.clone(),
    });
    Ok(ResolveResult {
        unresolved: resolved.is_none(),
        resolved,
    })
}
