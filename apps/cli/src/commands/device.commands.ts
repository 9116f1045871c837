import { Command } from 'commander';
import { invalidValue } from '@app/common';
import { DeviceImportService, DeviceStoreModule, parseImport } from '@app/device';
import { CliRuntime, readTextFile } from '../cli-runtime';

/** `device import`: bulk import for organizations that keep automatic device creation off (DECISIONS 11). */
export function registerDeviceCommands(program: Command, cli: CliRuntime): void {
  const device = program.command('device').description('Devices of an organization.');
  device
    .command('import <org> <file>')
    .description(
      'Import devices from a CSV file (one ATR,CUID per line, optional header) or a JSON array of {ATR, CUID}; ' +
        'one transaction; devices already present are reported, not changed. Prints the per-line report; exit 1 when a line was refused (the other lines are imported).',
    )
    .action(async (org: string, file: string) => {
      const text = readTextFile(file);
      const json = /^\s*\[/.test(text);
      let body: unknown = text;
      if (json) {
        try {
          body = JSON.parse(text);
        } catch {
          throw invalidValue(`${file} starts like a JSON array but is not valid JSON.`);
        }
      }
      const entries = parseImport(body, json ? 'json' : 'csv');
      await cli.withServices(
        async (app) => {
          const report = await app.get(DeviceImportService).import(org, entries, cli.actor);
          cli.print(report);
          if (report.failed > 0) throw invalidValue(`${report.failed} of ${report.total} lines were refused (see the report); the other lines were imported.`);
        },
        [DeviceStoreModule],
      );
    });
}
