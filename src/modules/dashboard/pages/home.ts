// Home: balances per currency, rail availability (the rails not fully operational, and maintenance to come), the last
// 7 days' volume and success rate per rail (a chart drawn here as SVG, with the same figures as a table), and the
// latest failed collections with their reasons.
import type { RailAvailability, SettlementReport } from '../../../../packages/sdk/src/index.js';
import type { PageContext, Pages } from '../page-context.js';
import { dataTable } from '../components.js';
import { html, type Html } from '../html.js';

const DAYS = 7;
/** Bar colours, one per rail in order (each at least 3:1 against white, as non-text contrast asks). */
const COLOURS = ['#0b5394', '#b35c00', '#0f5d2e', '#6a1b9a', '#a4001d', '#4d4d4d'];

interface RailDay {
  date: string;
  successful: number;
  volume: number;
  failed: number;
}
interface RailWeek {
  rail: string;
  days: RailDay[];
}

/** The UTC dates of the last `DAYS` days, oldest first, today last. */
function lastDays(now: Date): string[] {
  return Array.from({ length: DAYS }, (_, i) =>
    new Date(now.getTime() - (DAYS - 1 - i) * 86_400_000).toISOString().slice(0, 10),
  );
}

/** Per rail ("KE mpesa"), per day: what succeeded (count, volume) and what failed or expired, from the reports. */
function railWeeks(dates: string[], reports: (SettlementReport | undefined)[]): RailWeek[] {
  const rails = new Map<string, RailWeek>();
  reports.forEach((report, i) => {
    for (const r of report?.rails ?? []) {
      const name = `${r.market} ${r.rail}`;
      const week = rails.get(name) ?? {
        rail: name,
        days: dates.map((date) => ({ date, successful: 0, volume: 0, failed: 0 })),
      };
      const day = week.days[i];
      if (day) {
        day.successful += r.collections.successful.count;
        day.volume += r.collections.successful.amount;
        day.failed += r.collections.failed.count + r.collections.expired.count;
      }
      rails.set(name, week);
    }
  });
  return [...rails.values()];
}

const rate = (successful: number, failed: number): string =>
  successful + failed === 0 ? '—' : `${Math.round((successful / (successful + failed)) * 100)}%`;

/** Grouped bars: one group a day, one bar a rail, heights by volume. */
function chart(currency: string, weeks: RailWeek[], dates: string[], money: PageContext['money']): Html {
  const width = 480;
  const height = 200;
  const top = 12;
  const bottom = 32;
  const left = 8;
  const max = Math.max(1, ...weeks.flatMap((w) => w.days.map((d) => d.volume)));
  const group = (width - left) / dates.length;
  const bar = Math.max(4, (group - 12) / Math.max(1, weeks.length));
  const bars = weeks.flatMap((w, r) =>
    w.days.map((d, i) => {
      const h = Math.round(((height - top - bottom) * d.volume) / max);
      const x = left + i * group + 6 + r * bar;
      const y = height - bottom - h;
      return html`<rect
        x="${x.toFixed(1)}"
        y="${y}"
        width="${(bar - 2).toFixed(1)}"
        height="${h}"
        fill="${COLOURS[r % COLOURS.length]}"
        ><title>${w.rail}, ${d.date}: ${money(d.volume, currency)}</title></rect
      >`;
    }),
  );
  const labels = dates.map(
    (date, i) =>
      html`<text
        x="${(left + i * group + group / 2).toFixed(1)}"
        y="${height - bottom + 18}"
        text-anchor="middle"
        font-size="16"
        fill="#1a1a1a"
        >${date.slice(5)}</text
      >`,
  );
  const legend = weeks.map(
    (w, r) =>
      html`<li>
        <svg width="12" height="12" aria-hidden="true" focusable="false">
          <rect width="12" height="12" fill="${COLOURS[r % COLOURS.length]}" />
        </svg>
        ${w.rail}
      </li>`,
  );
  const id = `chart-${currency}`;
  return html`<figure class="chart card" aria-labelledby="${id}-caption">
    <figcaption id="${id}-caption">
      <strong>${currency}</strong>: successful volume per day and rail, last ${DAYS} days (UTC)
    </figcaption>
    <svg viewBox="0 0 ${width} ${height}" role="img" aria-labelledby="${id}-caption">
      <line x1="${left}" y1="${height - bottom}" x2="${width}" y2="${height - bottom}" stroke="#6b6f76" />
      ${bars}${labels}
    </svg>
    <ul class="legend">
      ${legend}
    </ul>
    <div class="table-wrap" role="region" aria-label="${currency} by rail, last ${DAYS} days" tabindex="0">
      <table>
        <thead>
          <tr>
            <th scope="col">Rail</th>
            <th scope="col" class="num">Successful</th>
            <th scope="col" class="num">Volume</th>
            <th scope="col" class="num">Failed or expired</th>
            <th scope="col" class="num">Success rate</th>
          </tr>
        </thead>
        <tbody>
          ${weeks.map((w) => {
            const ok = w.days.reduce((n, d) => n + d.successful, 0);
            const failed = w.days.reduce((n, d) => n + d.failed, 0);
            const volume = w.days.reduce((n, d) => n + d.volume, 0);
            return html`<tr>
              <th scope="row">${w.rail}</th>
              <td class="num">${ok}</td>
              <td class="num">${money(volume, currency)}</td>
              <td class="num">${failed}</td>
              <td class="num">${rate(ok, failed)}</td>
            </tr>`;
          })}
        </tbody>
      </table>
    </div>
  </figure>`;
}

const DIRECTIONS = ['collections', 'payouts', 'refunds'] as const;

/**
 * Rail availability: one row per direction that is not operational (status, why, since when), and the maintenance
 * planned; a line when every rail is operational.
 */
function availabilitySection(ctx: PageContext, rails: readonly RailAvailability[]): Html {
  const troubled = rails.flatMap((r) =>
    DIRECTIONS.flatMap((direction) => {
      const d = r[direction];
      return d && d.status !== 'operational' ? [{ rail: r, direction, d }] : [];
    }),
  );
  const planned = rails.filter((r) => r.maintenance !== null);
  return html`<section aria-labelledby="availability-title">
    <h2 id="availability-title">Rail availability</h2>
    ${
      troubled.length === 0
        ? html`<p class="card">Every rail is operational (${rails.length} rails).</p>`
        : dataTable(
            'Rails not operational',
            ['Rail', 'Direction', 'Status', 'Why', 'Since'],
            troubled.map(
              ({ rail, direction, d }) =>
                html`<tr>
                  <td>${rail.market} ${rail.rail}</td>
                  <td>${direction}</td>
                  <td><strong>${d.status}</strong></td>
                  <td>${d.detail}</td>
                  <td>${ctx.time(d.since)}</td>
                </tr>`,
            ),
          )
    }
    ${
      planned.length === 0
        ? ''
        : dataTable(
            'Planned maintenance',
            ['Rail', 'From', 'Until', 'Note'],
            planned.map(
              (r) =>
                html`<tr>
                  <td>${r.market} ${r.rail}</td>
                  <td>${ctx.time(r.maintenance?.starts_at)}</td>
                  <td>${ctx.time(r.maintenance?.ends_at)}</td>
                  <td>${r.maintenance?.note ?? ''}</td>
                </tr>`,
            ),
          )
    }
  </section>`;
}

export function homePage(pages: Pages): void {
  pages.get('/', async (ctx) => {
    if (ctx.session.audience === 'admin') return { redirect: '/dashboard/admin/workspaces' };
    const dates = lastDays(new Date());
    const [balances, failures, availability] = await Promise.all([
      ctx.api.balances.list(),
      ctx.api.collections.list({ status: 'failed', limit: 5 }).firstPage(),
      ctx.api.availability.get(),
    ]);
    const currencies = balances.data.map((b) => b.currency);
    // The charts are drawn from the settlement reports: a role without `reports` sees the balances and failures only.
    const charts = await Promise.all(
      (ctx.may('reports') ? currencies : []).map(async (currency) => {
        const reports = await Promise.all(dates.map((date) => ctx.api.reports.settlement({ date, currency })));
        const weeks = railWeeks(dates, reports);
        return weeks.length === 0
          ? html`<p class="card">No ${currency} payments in the last ${DAYS} days.</p>`
          : chart(currency, weeks, dates, ctx.money);
      }),
    );
    const content = html`<section aria-labelledby="balances-title">
        <h2 id="balances-title">Balances</h2>
        ${
          balances.data.length === 0
            ? html`<p class="card">No balance yet: it starts with your first successful collection.</p>`
            : html`<div class="cards">
                ${balances.data.map(
                  (b) =>
                    html`<div class="card">
                      <p class="muted">${b.currency} available</p>
                      <p class="figure">${ctx.money(b.available, b.currency)}</p>
                      <p class="muted">as of ${ctx.time(b.updated_at)}</p>
                    </div>`,
                )}
              </div>`
        }
      </section>
      ${availabilitySection(ctx, availability.data)}
      ${
        ctx.may('reports')
          ? html`<section aria-labelledby="volume-title">
              <h2 id="volume-title">Last ${DAYS} days</h2>
              ${charts}
            </section>`
          : ''
      }
      <section aria-labelledby="failures-title">
        <h2 id="failures-title">Latest failures</h2>
        ${
          failures.data.length === 0
            ? html`<p class="card">No failed collections.</p>`
            : dataTable(
                'Latest failures',
                ['Reference', { label: 'Amount', num: true }, 'Reason', 'When'],
                failures.data.map(
                  (c) =>
                    html`<tr>
                      <td><a href="/dashboard/collections/${c.collection_id}">${c.reference}</a></td>
                      <td class="num">${ctx.money(c.amount, c.currency)}</td>
                      <td>${c.failure_reason ?? 'unknown'}</td>
                      <td>${ctx.time(c.updated_at)}</td>
                    </tr>`,
                ),
              )
        }
      </section>`;
    return { title: 'Home', content };
  });
}
