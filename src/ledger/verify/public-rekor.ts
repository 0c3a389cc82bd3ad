// The public Sigstore Rekor log's key (rekor.sigstore.dev, ECDSA P-256), built in so that
// `verify --require-anchors` needs no flag for Rekor (the threat model's built-in default). It is
// the key that the log's real entries verify against (test/ledger/fixtures/public-log/); a
// deployment anchoring to another log gives that log's key with --rekor-key.
export const PUBLIC_REKOR_KEY_PEM = `-----BEGIN PUBLIC KEY-----
MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE2G2Y+2tabdTV5BcGiBIx0a9fAFwr
kBbmLSGtks4L3qX6yYY0zufBnhC8Ur/iy55GhWP/9A/bY2LhC30M9+RYtw==
-----END PUBLIC KEY-----
`;
