/** The closing marker of every generated section of a markdown document. */
export const GENERATED_END = '<!-- END GENERATED -->';

/** The opening marker of a section generated from `source` (a path in the repository). */
export function generatedBegin(source: string): string {
  return `<!-- BEGIN GENERATED from ${source}; do not edit by hand -->`;
}

/**
 * `document` with the section generated from `source` replaced by `rendered`: docs that show a
 * table the code decides from (a lifecycle) hold the code's own rendering, and a unit test compares.
 */
export function withGeneratedSection(document: string, source: string, rendered: string): string {
  const marker = generatedBegin(source);
  const begin = document.indexOf(marker);
  const end = document.indexOf(GENERATED_END, begin);
  if (begin < 0 || end < begin) throw new Error(`The document lost the markers of its section generated from ${source}`);
  return `${document.slice(0, begin + marker.length)}\n${rendered}\n${document.slice(end)}`;
}
