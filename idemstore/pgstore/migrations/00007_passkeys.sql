-- +goose Up
-- passkey: a WebAuthn credential registered for a subject; credential is
-- go-webauthn's record (public key, flags, authenticator) as JSON, and
-- sign_count the last signature counter seen (an assertion must advance
-- it). A revoked passkey is kept (revoked_at) for the audit.
CREATE TABLE passkey (
    id              text PRIMARY KEY,
    subject         text        NOT NULL,
    credential      jsonb       NOT NULL,
    sign_count      bigint      NOT NULL DEFAULT 0,
    created_at      timestamptz NOT NULL,
    enrol_trace_id  text        NOT NULL DEFAULT '',
    last_used_at    timestamptz NULL,
    revoked_at      timestamptz NULL,
    revoked_by      text        NOT NULL DEFAULT '',
    revoke_trace_id text        NOT NULL DEFAULT ''
);
CREATE INDEX passkey_subject_idx ON passkey (subject, created_at);

-- passkey_invite: a one-time enrolment link; only the SHA-256 of its token
-- is kept. session is the registration ceremony begun with it (its
-- challenge); used_at marks the one enrolment it allowed.
CREATE TABLE passkey_invite (
    token_sha256 text PRIMARY KEY,
    subject      text        NOT NULL,
    created_by   text        NOT NULL DEFAULT '',
    created_at   timestamptz NOT NULL,
    expires_at   timestamptz NOT NULL,
    session      jsonb       NULL,
    used_at      timestamptz NULL,
    passkey_id   text        NOT NULL DEFAULT '',
    trace_id     text        NOT NULL DEFAULT ''
);

-- +goose Down
DROP TABLE passkey_invite;
DROP TABLE passkey;
