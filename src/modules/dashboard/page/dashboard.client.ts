// The dashboard's one script, bundled by esbuild at start and pinned by hash in the CSP. Every page works without
// it; it adds copy buttons for tokens, secrets and links, and tells the server the browser's time zone so that
// times show in it (a cookie; the server shows UTC until then).
function copyButtons(): void {
  for (const button of Array.from(document.querySelectorAll<HTMLButtonElement>('button[data-copy]'))) {
    button.hidden = false;
    button.addEventListener('click', () => {
      const source = document.getElementById(button.dataset.copy ?? '');
      const text = source instanceof HTMLInputElement ? source.value : (source?.textContent ?? '');
      void navigator.clipboard.writeText(text.trim()).then(
        () => {
          const status = document.getElementById(`${button.dataset.copy ?? ''}-copied`);
          if (status) status.textContent = 'Copied.';
        },
        () => undefined,
      );
    });
  }
}

function rememberTimeZone(): void {
  const zone = Intl.DateTimeFormat().resolvedOptions().timeZone;
  if (zone && !document.cookie.split('; ').includes(`dashboard_tz=${encodeURIComponent(zone)}`))
    document.cookie = `dashboard_tz=${encodeURIComponent(zone)}; path=/dashboard; max-age=31536000; samesite=strict`;
}

copyButtons();
rememberTimeZone();
