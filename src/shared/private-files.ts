/**
 * Modes of what the service writes for itself. The store holds configurations and sealed keys,
 * recordings hold callers' voices: the owner only, whatever the umask.
 */
export const PRIVATE_DIR_MODE = 0o700;
export const PRIVATE_FILE_MODE = 0o600;
