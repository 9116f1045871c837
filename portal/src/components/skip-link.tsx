/** The first stop of the keyboard on every page: straight to its main content (the element with id "main"). */
export function SkipLink() {
  return (
    <a className="skip-link" href="#main">
      Skip to main content
    </a>
  );
}
