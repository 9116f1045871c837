import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { Controller, Get, Res } from '@nestjs/common';
import { ApiExcludeController } from '@nestjs/swagger';
import type { FastifyReply } from 'fastify';
import { Public } from '@app/common';

/** Where the hosted pages load @simplewebauthn/browser and their own passkey script from (the CSP's `script-src 'self'`). */
export const WEBAUTHN_BROWSER_PATH = '/authentication/webauthn/simplewebauthn-browser.js';
export const PASSKEY_SCRIPT_PATH = '/authentication/webauthn/passkey.js';

/**
 * The page side of a passkey form (DECISIONS 14.5): a form marked `data-passkey="register"` or
 * `"authenticate"` holds the ceremony's options (JSON, in `data-options`); on submit the script asks
 * the browser (through @simplewebauthn/browser), puts the answer in the form's `response` field and
 * submits it, so the server checks it as a form post like every other step. What went wrong in the
 * browser is said in the form's status line (`role="alert"`).
 */
export const PASSKEY_SCRIPT = `'use strict';
(function () {
  var lib = window.SimpleWebAuthnBrowser;
  function say(form, text) {
    var status = form.querySelector('[data-passkey-status]');
    status.textContent = text;
    status.hidden = false;
  }
  function sentence(error) {
    var name = error && error.name;
    if (name === 'NotAllowedError') return 'The passkey request was cancelled or timed out. Try again.';
    if (name === 'InvalidStateError') return 'This authenticator already holds a passkey for this account. Use another one, or sign in with it.';
    if (name === 'SecurityError') return 'Passkeys work only at this service\\'s own address (' + location.hostname + ' is not it). Open the service at its address and try again.';
    if (name === 'NotSupportedError') return 'Your authenticator does not offer a key type this service accepts.';
    return 'The passkey did not work here: ' + ((error && error.message) || 'unknown error') + '. Try again.';
  }
  var forms = document.querySelectorAll('form[data-passkey]');
  Array.prototype.forEach.call(forms, function (form) {
    if (!lib || !lib.browserSupportsWebAuthn()) {
      say(form, 'This browser cannot use passkeys. Use another way to sign in, or another browser.');
      return;
    }
    form.addEventListener('submit', function (event) {
      event.preventDefault();
      var options = JSON.parse(form.getAttribute('data-options'));
      var asked = form.getAttribute('data-passkey') === 'register'
        ? lib.startRegistration({ optionsJSON: options })
        : lib.startAuthentication({ optionsJSON: options });
      asked.then(function (answer) {
        form.querySelector('input[name=response]').value = JSON.stringify(answer);
        form.submit();
      }, function (error) {
        say(form, sentence(error));
      });
    });
  });
})();
`;

/** @simplewebauthn/browser's UMD bundle (it sets window.SimpleWebAuthnBrowser), read once at start. */
const WEBAUTHN_BROWSER = readFileSync(
  // The package exports no path to its bundle: found beside its CommonJS entry (script/index.js).
  join(dirname(require.resolve('@simplewebauthn/browser')), '..', 'dist', 'bundle', 'index.umd.min.js'),
  'utf8',
);

/** The two scripts of the passkey forms, served as files so that the pages' CSP needs no inline script. */
@ApiExcludeController()
@Public()
@Controller()
export class PasskeyScriptsController {
  @Get(WEBAUTHN_BROWSER_PATH.slice(1))
  library(@Res() reply: FastifyReply): void {
    script(reply, WEBAUTHN_BROWSER);
  }

  @Get(PASSKEY_SCRIPT_PATH.slice(1))
  passkey(@Res() reply: FastifyReply): void {
    script(reply, PASSKEY_SCRIPT);
  }
}

function script(reply: FastifyReply, body: string): void {
  void reply
    .code(200)
    .header('Content-Type', 'text/javascript; charset=utf-8')
    .header('Cache-Control', 'public, max-age=3600')
    .header('X-Content-Type-Options', 'nosniff')
    .send(body);
}
