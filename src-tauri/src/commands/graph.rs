//! The link graph and link resolution.

use std::collections::{HashMap, HashSet};

use pkm_core::{KbError, KbResult, VaultPath};

use crate::app::App;
use crate::dto::{self, GraphData, GraphEdge, GraphNode, ResolveResult, ResolvedPage};

/// The whole graph, or the pages within `depth` hops (links followed both ways) of `path`.
/// Nodes are pages (id = path); edges are resolved links, one per (source, target) pair.
pub fn get_graph_data(app: &App, path: Option<&VaultPath>, depth: usize) -> KbResult<GraphData> {
    app.wait_ready()?;
    let graph = app.link_graph()?;
    let pages = graph.resolver.pages();
    // The pages kept (all, or those within `depth` hops of `path`), in page order.
    let kept: Vec<usize> = match path {
        None => (0..pages.len()).collect(),
        Some(p) => {
            let start = pages
                .iter()
                .position(|page| page.path == p.as_str())
                .ok_or_else(|| KbError::not_found(p.as_str()))?;
            let mut near: Vec<usize> = graph.within(start, depth).into_iter().collect();
            near.sort_unstable();
            near
        }
    };
    let keep: HashSet<usize> = match path {
        Some(_) => kept.iter().copied().collect(),
        None => HashSet::new(),
    };
    let is_kept = |i: usize| path.is_none() || keep.contains(&i);
    let edges: Vec<(usize, usize, &Option<String>)> = kept
        .iter()
        .flat_map(|&s| {
            graph
                .out
                .get(s)
                .map(Vec::as_slice)
                .unwrap_or(&[])
                .iter()
                .filter(|(t, _)| is_kept(*t))
                .map(move |(t, alias)| (s, *t, alias))
        })
        .collect();
    let mut degree: HashMap<usize, usize> = HashMap::new();
    for (s, t, _) in &edges {
        *degree.entry(*s).or_default() += 1;
        *degree.entry(*t).or_default() += 1;
    }
    let mut nodes: Vec<GraphNode> = kept
        .iter()
        .filter_map(|&i| {
            let p = pages.get(i)?;
            Some(GraphNode {
                id: p.path.clone(),
                title: p.title.clone(),
                path: p.path.clone(),
                tags: p.tags.clone(),
                degree: degree.get(&i).copied().unwrap_or(0),
            })
        })
        .collect();
    nodes.sort_by(|a, b| b.degree.cmp(&a.degree).then_with(|| a.path.cmp(&b.path)));
    let mut edges: Vec<GraphEdge> = edges
        .into_iter()
        .filter_map(|(s, t, label)| {
            Some(GraphEdge {
                source: pages.get(s)?.path.clone(),
                target: pages.get(t)?.path.clone(),
                label: label.clone(),
            })
        })
        .collect();
    edges.sort_by(|a, b| (&a.source, &a.target).cmp(&(&b.source, &b.target)));

    // Keep the response under the cap: the best-connected nodes first, and only edges between
    // the nodes kept.
    let node_fit = dto::fit_to_budget(&nodes, app.config.list_budget / 2);
    let truncated_nodes = node_fit < nodes.len();
    nodes.truncate(node_fit);
    if truncated_nodes {
        let ids: HashSet<&str> = nodes.iter().map(|n| n.id.as_str()).collect();
        edges.retain(|e| ids.contains(e.source.as_str()) && ids.contains(e.target.as_str()));
    }
    let edge_fit = dto::fit_to_budget(&edges, app.config.list_budget / 2);
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

/// The note a link names, or `unresolved: true`. `target` is a bare target (`Note`,
/// `folder/Note`, `Note#Heading`, percent-encoded or not) or a link as written in a note
/// (`[[Note|alias]]`, `![[Note]]`, `[text](Note.md)`, `((uuid))`); a relative path
/// (`../folder/Note.md`) is taken as the partial path it ends with.
pub fn resolve_link_target(app: &App, target: &str) -> KbResult<ResolveResult> {
    app.wait_ready()?;
    let resolver = app.resolver()?;
    let written = pkm_markdown::linker::written_target(target, app.dialect());
    let decoded = pkm_markdown::dialect::percent_decode(target);
    let relative = pkm_markdown::linker::strip_relative(&decoded);
    let resolved = [
        written.as_deref(),
        Some(target),
        Some(&decoded),
        Some(relative),
    ]
    .into_iter()
    .flatten()
    .find_map(|t| resolver.resolve(t))
    .map(|p| ResolvedPage {
        slug: pkm_core::path::slug_of(&p.path).to_owned(),
        path: p.path.clone(),
        title: p.title.clone(),
    });
    Ok(ResolveResult {
        unresolved: resolved.is_none(),
        resolved,
    })
}
