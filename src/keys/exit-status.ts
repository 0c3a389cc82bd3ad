// How a command on a token key ends when the token never answered a call (ADR 094), as --help
// lists it beside the other exit statuses. A module of its own: main's usage loads nothing of the token code.
export const EXIT_TOKEN_HELD = '137 (SIGKILL) a PKCS#11 token never answered a call and held the process at exit (stderr says so; ADR 094)';
