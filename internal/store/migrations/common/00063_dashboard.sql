-- +goose Up
-- The dashboard's sign-in links and sessions (internal/dashboard owns
-- both). Only SHA-256 hashes of the link and cookie tokens are stored; a
-- session holds its API key sealed with the secret box, so that every
-- request authenticates the key again (a revoked key ends the session).
CREATE TABLE dashboard_links (
    id           TEXT PRIMARY KEY,   -- hex SHA-256 of the link's token
    workspace_id TEXT NOT NULL,
    created_at   BIGINT NOT NULL,
    expires_at   BIGINT NOT NULL,
    used_at      BIGINT               -- set once: a link signs in one time
);

CREATE TABLE dashboard_sessions (
    id           TEXT PRIMARY KEY,   -- hex SHA-256 of the cookie's token
    workspace_id TEXT NOT NULL,
    key_id       TEXT NOT NULL,
    sealed_key   TEXT NOT NULL,      -- the API key, sealed (secretbox)
    owned_key    INTEGER NOT NULL DEFAULT 0, -- 1: made for this session by a link; revoked at sign-out
    csrf         TEXT NOT NULL,      -- the session's form token
    created_at   BIGINT NOT NULL,
    expires_at   BIGINT NOT NULL
);
CREATE INDEX dashboard_sessions_expiry ON dashboard_sessions (expires_at);

-- +goose Down
DROP TABLE dashboard_sessions;
DROP TABLE dashboard_links;
