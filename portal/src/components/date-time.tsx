/**
 * An instant as the person reads dates (the browser's locale), with the ISO instant as its title
 * for the exact moment: the portal's one date format (STYLE, "The portal"). `date` shows the day only.
 */
export function DateTime({ iso, date = false }: { iso: string | null | undefined; date?: boolean }) {
  if (!iso) return <>never</>;
  const value = new Date(iso);
  return (
    <time dateTime={iso} title={iso}>
      {date ? value.toLocaleDateString(undefined, { year: 'numeric', month: 'short', day: 'numeric' }) : value.toLocaleString()}
    </time>
  );
}
