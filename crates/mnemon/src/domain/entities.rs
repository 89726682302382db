//! Entities: one per name, mentions, properties, links and merges.

use crate::db::Ns;
use crate::error::{Error, Result};
use mnemon_storage::body::{Entity, Mention};
use mnemon_storage::{AsOf, Body, JsonText, Kind, NewRecord, Record, RecordId, Revise, WriteOp};
use serde_json::Value;

use super::*;

/// The auxiliary row naming the entity that absorbed the one called `name`:
/// `app/alias/<namespace>/<blake3 of the normalised name, 32 hex digits>` (the name itself
/// is in the row).
pub(super) fn alias_key(ns: &mnemon_storage::Namespace, name: &str) -> String {
    let hash = blake3::hash(mnemon_storage::body::normalise_key(name).as_bytes());
    format!("app/alias/{}/{}", ns.as_str(), &hash.to_hex()[..32])
}

/// Entities of one namespace; see [`Ns::entities`].
#[derive(Clone, Copy)]
pub struct Entities<'a> {
    pub(super) ns: &'a Ns,
}

impl Entities<'_> {
    /// The entity valid now with this name, compared case-insensitively, or the entity that
    /// absorbed the one of that name ([`Self::merge`]: the absorbed name stays an alias).
    pub fn find_by_name(&self, name: &str) -> Result<Option<Record>> {
        let snap = self.ns.db().snapshot()?;
        if let Some(id) = snap.identity(self.ns.name(), Kind::Entity, name)? {
            return self.ns.get(id);
        }
        let Some(row) = snap.aux(&alias_key(self.ns.name(), name))? else { return Ok(None) };
        let Some(mut id) = serde_json::from_slice::<Value>(&row)
            .ok()
            .and_then(|v| v["id"].as_str().and_then(|s| s.parse::<RecordId>().ok()))
        else {
            return Ok(None);
        };
        // The survivor may itself have been absorbed since: follow the merges.
        for _ in 0..16 {
            match snap.latest(self.ns.name(), id)? {
                Some(r) if r.superseded_by.is_none() => return self.ns.get(r.id),
                Some(r) => id = r.superseded_by.unwrap_or(r.id),
                None => return Ok(None),
            }
        }
        Ok(None)
    }

    /// The entity with `e.name` if there is one (filling in its description and a type of
    /// `other` from `e`, and adding `e`'s properties it lacks), else a new one. Returns its id
    /// and whether it was created.
    pub fn find_or_create(&self, e: Entity) -> Result<(RecordId, bool)> {
        if let Some(existing) = self.find_by_name(&e.name)? {
            self.ns.edit::<Entity>(existing.id, |cur, _| {
                if cur.description.is_empty() {
                    cur.description.clone_from(&e.description);
                }
                if cur.entity_type.as_str() == "other" {
                    cur.entity_type = e.entity_type.clone();
                }
                cur.properties = merge_properties(&cur.properties, &e.properties);
                Ok(())
            })?;
            return Ok((existing.id, false));
        }
        let rec = NewRecord::new(self.ns.name().clone(), e);
        match self.ns.insert(rec)? {
            mnemon_storage::Outcome::Existing { id } => Ok((id, false)),
            o => Ok((o.id(), true)),
        }
    }

    /// Record a mention of the entity.
    pub fn mention(&self, id: RecordId, context: &str, source: &str) -> Result<Record> {
        let at = self.ns.db().now();
        self.ns.edit::<Entity>(id, |e, _| {
            e.mentions.push(Mention { context: context.to_string(), at, source: source.into() });
            Ok(())
        })
    }

    /// Set one property (a JSON value; `null` removes it).
    pub fn set_property(&self, id: RecordId, key: &str, value: Value) -> Result<Record> {
        self.ns.edit::<Entity>(id, |e, _| {
            let mut props = e.properties.value();
            let Some(obj) = props.as_object_mut() else {
                return Err(rule(id, "the entity's properties are not a JSON object"));
            };
            if value.is_null() {
                obj.remove(key);
            } else {
                obj.insert(key.to_string(), value.clone());
            }
            e.properties = JsonText::from_value(&props);
            Ok(())
        })
    }

    /// Link two entities both ways (one commit).
    pub fn link(&self, a: RecordId, b: RecordId) -> Result<()> {
        if a == b {
            return Err(rule(a, "an entity cannot be linked to itself"));
        }
        self.ns.edit_together(&[a, b], |recs| {
            let [x, y] = recs else { return Ok(()) };
            let (Body::Entity(xe), Body::Entity(ye)) = (&mut x.body, &mut y.body) else {
                return Err(rule(a, "both records must be entities"));
            };
            if !xe.related_entities.contains(&b) {
                xe.related_entities.push(b);
            }
            if !ye.related_entities.contains(&a) {
                ye.related_entities.push(a);
            }
            Ok(())
        })
    }

    /// Merge `absorb` into `keep` in one commit: `keep` gains the mentions, the properties it
    /// lacks, the links (re-pointed) and tags of `absorb`, and a description if it had none;
    /// `absorb` ends, superseded by `keep` (its history stays; its chain leads to `keep`).
    /// `keep`'s metadata lists what it absorbed under `merged_from`, and the absorbed name
    /// stays an alias of `keep` ([`Self::find_by_name`], so `find_or_create` finds it).
    pub fn merge(&self, keep: RecordId, absorb: RecordId) -> Result<Record> {
        if keep == absorb {
            return Err(rule(keep, "an entity cannot absorb itself"));
        }
        for _ in 0..ATTEMPTS {
            let snap = self.ns.db().snapshot()?;
            let k = snap.latest(self.ns.name(), keep)?.ok_or_else(|| not_found(self.ns, keep))?;
            let a = snap.latest(self.ns.name(), absorb)?.ok_or_else(|| not_found(self.ns, absorb))?;
            let mut ke: Entity = typed(&k)?;
            let ae: Entity = typed(&a)?;
            if a.superseded_by.is_some() || a.valid_until.is_some() {
                return Err(rule(absorb, "the entity has already ended"));
            }
            ke.mentions.extend(ae.mentions.iter().cloned());
            ke.mentions.sort_by_key(|m| m.at);
            for r in &ae.related_entities {
                if *r != keep && !ke.related_entities.contains(r) {
                    ke.related_entities.push(*r);
                }
            }
            ke.related_entities.retain(|r| *r != absorb);
            ke.properties = merge_properties(&ke.properties, &ae.properties);
            if ke.description.is_empty() {
                ke.description.clone_from(&ae.description);
            }
            let mut env = k.envelope.clone();
            for t in &a.envelope.tags {
                if !env.tags.contains(t) {
                    env.tags.push(t.clone());
                }
            }
            let mut meta = env.metadata.value();
            if !meta.is_object() {
                meta = Value::Object(serde_json::Map::new());
            }
            if let Some(obj) = meta.as_object_mut() {
                let list = obj.entry("merged_from").or_insert_with(|| Value::Array(Vec::new()));
                if let Some(arr) = list.as_array_mut() {
                    arr.push(serde_json::json!({"id": absorb.to_string(), "name": ae.name}));
                }
            }
            env.metadata = JsonText::from_value(&meta);
            let alias = serde_json::json!({ "name": ae.name, "id": keep.to_string() });
            let mut ops = vec![
                WriteOp::PutAux {
                    key: alias_key(self.ns.name(), &ae.name),
                    value: Some(
                        serde_json::to_vec(&alias).map_err(|e| crate::error::invalid(e.to_string()))?,
                    ),
                },
                WriteOp::MergeInto {
                    namespace: self.ns.name().clone(),
                    absorbed: absorb,
                    into: keep,
                    at: None,
                },
                WriteOp::Revise(Revise {
                    namespace: self.ns.name().clone(),
                    id: keep,
                    expected_rev: Some(k.rev),
                    body: Some(ke.into()),
                    envelope: Some(env),
                    valid_from: None,
                    valid_until: None,
                    expires_at: None,
                }),
            ];
            // Entities that linked to the absorbed one now link to the survivor.
            for other in ae.related_entities.iter().filter(|r| **r != keep) {
                if let Some(o) = snap.latest(self.ns.name(), *other)?
                    && let Body::Entity(mut oe) = o.body.clone()
                    && o.valid_until.is_none()
                {
                    oe.related_entities.retain(|r| *r != absorb);
                    if !oe.related_entities.contains(&keep) {
                        oe.related_entities.push(keep);
                    }
                    ops.push(WriteOp::Revise(Revise {
                        namespace: self.ns.name().clone(),
                        id: o.id,
                        expected_rev: Some(o.rev),
                        body: Some(oe.into()),
                        envelope: None,
                        valid_from: None,
                        valid_until: None,
                        expires_at: None,
                    }));
                }
            }
            match self.ns.db().write(ops) {
                Err(Error::Storage(mnemon_storage::Error::RevisionConflict { .. })) => continue,
                Err(e) => return Err(e),
                Ok(_) => return self.ns.latest(keep)?.ok_or_else(|| not_found(self.ns, keep)),
            }
        }
        Err(Error::Contended { id: keep, attempts: ATTEMPTS })
    }

    /// Entities valid now of one type, most recently mentioned first.
    pub fn by_type(&self, entity_type: &str) -> Result<Vec<Record>> {
        let mut out: Vec<Record> = self
            .ns
            .list_of::<Entity>(AsOf::now())?
            .into_iter()
            .filter(|r| matches!(&r.body, Body::Entity(e) if e.entity_type.as_str().eq_ignore_ascii_case(entity_type)))
            .collect();
        let last = |r: &Record| match &r.body {
            Body::Entity(e) => e.mentions.iter().map(|m| m.at).max(),
            _ => None,
        };
        out.sort_by(|a, b| last(b).cmp(&last(a)).then(b.id.cmp(&a.id)));
        Ok(out)
    }
}

/// `base` with the keys of `extra` it lacks (both JSON objects; anything else counts as empty).
pub(super) fn merge_properties(base: &JsonText, extra: &JsonText) -> JsonText {
    let mut b = base.value();
    if !b.is_object() {
        b = Value::Object(serde_json::Map::new());
    }
    if let (Some(bo), Value::Object(eo)) = (b.as_object_mut(), extra.value()) {
        for (k, v) in eo {
            bo.entry(k).or_insert(v);
        }
    }
    JsonText::from_value(&b)
}
