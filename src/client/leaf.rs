//! A `Client` that is a leafnode connection (`crate::leaf`), or a route: what the core asks
//! of its kind. Kept apart from `mod.rs`, which holds the rest of the shared connection.

use super::Client;

impl Client {
    /// Marks a new connection as a leafnode connection (`crate::leaf`): its subscriptions
    /// are remote interest and publishers send it `LMSG`. `spoke`: we solicited it, the
    /// other side is our hub (nats-server's `isSpokeLeafNode`).
    pub(crate) fn into_leaf(mut self, spoke: bool) -> Self {
        self.leaf = Some(spoke);
        self
    }

    /// Whether this connection is a leafnode connection (either role).
    #[inline]
    pub fn is_leaf(&self) -> bool {
        self.leaf.is_some()
    }

    /// Whether this is our leafnode connection to a hub (we are the spoke).
    #[inline]
    pub fn is_spoke_leaf(&self) -> bool {
        self.leaf == Some(true)
    }

    /// The id's name in logs for another server's connection: `rid` for a route, `lid`
    /// for a leafnode connection (nats-server's); `None` for a client.
    pub(crate) fn server_kind(&self) -> Option<&'static str> {
        if self.is_route() {
            Some("rid")
        } else if self.is_leaf() {
            Some("lid")
        } else {
            None
        }
    }
}
