-- The lobby's read model of accounts: one row per account, projected from the LOBBY stream's AccountRegistered
-- events with the look of each name (its UTS #39 skeleton, paiju.lobby.accounts.name_skeleton), so that
-- registration refuses a name that looks like an existing one, also one registered before names were claimed.
--
-- The "accounts" projection has a checkpoint of its own in lobby_checkpoints: it has none yet, so the read model
-- reads the stream from its start for it on its next catch-up (while "tables" skips what it already applied),
-- and a deployment whose "tables" checkpoint is already past its old accounts still gets every one of them.
CREATE TABLE lobby_accounts (
    player_id text PRIMARY KEY,
    name      text NOT NULL,               -- as chosen (NFKC, trimmed)
    skeleton  text NOT NULL,               -- what the name looks like: one skeleton, confusable names
    guest     boolean NOT NULL             -- a guest's account (guest-xxxxxx): never a confusable name
);
CREATE INDEX lobby_accounts_skeleton ON lobby_accounts (skeleton);

-- Start the accounts projection from the stream's start (no row can be here yet: said for whoever reads this).
DELETE FROM lobby_checkpoints WHERE projection = 'accounts';
