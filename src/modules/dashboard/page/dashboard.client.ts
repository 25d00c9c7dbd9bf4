// The dashboard's one script, bundled by esbuild at start and pinned by hash in the CSP. Every page works without
// it; it adds copy buttons for tokens, secrets and links, reads a chosen CSV file into its form (bulk payouts), and tells the server the browser's time zone so that
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

/** A CSV file input (bulk payouts): shown, and its file read into the text box the form sends, up to its size limit. */
function csvFiles(): void {
  for (const input of Array.from(document.querySelectorAll<HTMLInputElement>('input[type="file"][data-csv-into]'))) {
    const field = input.closest<HTMLElement>('.field');
    if (field) field.hidden = false;
    input.addEventListener('change', () => {
      const file = input.files?.[0];
      const target = document.getElementById(input.dataset.csvInto ?? '');
      const status = document.getElementById(`${input.id}-status`);
      if (!file || !(target instanceof HTMLTextAreaElement)) return;
      const limit = Number(input.dataset.maxChars);
      if (file.size > limit) {
        if (status) status.textContent = `${file.name} is larger than ${limit / 1000} KB: split it.`;
        return;
      }
      void file.text().then(
        (text) => {
          target.value = text;
          if (status) status.textContent = `${file.name} read: check it below, then pay.`;
        },
        () => {
          if (status) status.textContent = `${file.name} could not be read.`;
        },
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
csvFiles();
rememberTimeZone();
