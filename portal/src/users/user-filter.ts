/** A SCIM string literal: the person's typing never becomes filter syntax. */
export const scimString = (text: string) => JSON.stringify(text);

/**
 * The admin user list's search (DECISIONS 17.2): the beginning of the user name (an indexed prefix
 * search), or a part of the display name or of an e-mail address.
 */
export const userSearchFilter = (text: string) => {
  const literal = scimString(text);
  return `userName sw ${literal} or displayName co ${literal} or emails.value co ${literal}`;
};
