/**
 * A package's option keys less the ones the CLI does not take from a config (it sets them itself,
 * or they cannot be written in YAML, such as functions). The omitted keys must be keys of the
 * package's list (checked by the type), so a renamed or removed option is a compile error here,
 * and an option a package adds is passed through without a change to the CLI.
 */
export function omitKeys<Key extends string, Omitted extends Key>(
  keys: readonly Key[],
  omitted: readonly Omitted[],
): Exclude<Key, Omitted>[] {
  return keys.filter((key): key is Exclude<Key, Omitted> => !omitted.includes(key as Omitted));
}
