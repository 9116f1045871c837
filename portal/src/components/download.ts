/** Saves text as a file named `name` (a blob URL: the portal's CSP allows no data: download). */
export function downloadText(name: string, text: string, type = 'application/x-pem-file'): void {
  const url = URL.createObjectURL(new Blob([text], { type }));
  const link = document.createElement('a');
  link.href = url;
  link.download = name;
  link.click();
  URL.revokeObjectURL(url);
}
