//! Conversations and their messages.

use crate::db::Ns;
use crate::error::Result;
use mnemon_storage::body::{Conversation, Message, Role};
use mnemon_storage::{AsOf, Kind, ListQuery, NewRecord, Record, RecordId};

use super::*;

/// Conversations of one namespace; see [`Ns::conversations`].
#[derive(Clone, Copy)]
pub struct Conversations<'a> {
    pub(super) ns: &'a Ns,
}

impl Conversations<'_> {
    /// Start a conversation; returns its id. Beyond [`CONVERSATIONS_KEPT`] conversations in
    /// the namespace, the oldest are retired (with their messages).
    pub fn start(&self, title: &str) -> Result<RecordId> {
        let id = self.ns.add(Conversation { title: title.to_string(), ..Default::default() })?;
        self.trim()?;
        Ok(id)
    }

    /// Add a message to an open conversation; returns the message's id.
    pub fn add(&self, conversation: RecordId, role: Role, content: &str) -> Result<RecordId> {
        let c = self.ns.get(conversation)?.ok_or_else(|| not_found(self.ns, conversation))?;
        let conv: Conversation = typed(&c)?;
        if conv.ended_at.is_some() {
            return Err(rule(conversation, "the conversation has ended"));
        }
        let mut rec = NewRecord::new(
            self.ns.name().clone(),
            Message { conversation: Some(conversation), role, content: content.to_string() },
        );
        rec.envelope.task = Some(conversation.to_string().into());
        self.ns.insert(rec).map(|o| o.id())
    }

    /// End a conversation with an optional summary.
    pub fn end(&self, conversation: RecordId, summary: Option<&str>) -> Result<Record> {
        let at = self.ns.db().now();
        self.ns.edit::<Conversation>(conversation, |c, _| {
            if c.ended_at.is_some() {
                return Err(rule(conversation, "the conversation has already ended"));
            }
            c.ended_at = Some(at);
            c.summary = summary.map(str::to_string);
            Ok(())
        })
    }

    /// The messages of a conversation, oldest first.
    pub fn messages(&self, conversation: RecordId) -> Result<Vec<Record>> {
        let mut q = ListQuery::new().kinds([Kind::Message]);
        q.task = Some(conversation.to_string());
        let mut out = self.ns.list(&q)?;
        out.sort_by_key(|r| r.id);
        Ok(out)
    }

    /// The most recent conversations, newest first.
    pub fn recent(&self, limit: usize) -> Result<Vec<Record>> {
        let mut all = self.ns.list_of::<Conversation>(AsOf::now())?;
        all.sort_by_key(|r| std::cmp::Reverse(r.id));
        all.truncate(limit);
        Ok(all)
    }

    fn trim(&self) -> Result<()> {
        let all = self.recent(usize::MAX)?;
        for old in all.iter().skip(CONVERSATIONS_KEPT) {
            for m in self.messages(old.id)? {
                self.ns.retire(m.id, None)?;
            }
            self.ns.retire(old.id, None)?;
        }
        Ok(())
    }
}
